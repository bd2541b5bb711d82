//! The audit log in words: what an entry's `METHOD /api/v1/route` did ("Published a version")
//! and the page its target opens, so an admin reads the log without knowing the API. An action
//! not in the table is shown as recorded.

/// (method and route as the server records them, what it did).
const ACTIONS: &[(&str, &str)] = &[
    ("POST /api/v1/workflows", "Created a workflow"),
    ("PATCH /api/v1/workflows/{id}", "Renamed or described a workflow"),
    ("PUT /api/v1/workflows/{id}/draft", "Saved a draft"),
    ("POST /api/v1/workflows/{id}/versions", "Published a version"),
    ("POST /api/v1/workflows/{id}/archive", "Archived a workflow"),
    ("POST /api/v1/workflows/{id}/unarchive", "Restored a workflow"),
    ("POST /api/v1/workflows/{id}/instances", "Started a run"),
    ("PUT /api/v1/workflows/{id}/retention", "Set a workflow's retention"),
    ("POST /api/v1/workflows/{id}/triggers", "Added a trigger"),
    ("PATCH /api/v1/triggers/{id}", "Changed a trigger"),
    ("DELETE /api/v1/triggers/{id}", "Deleted a trigger"),
    ("POST /api/v1/triggers/{id}/rotate-secret", "Rotated a webhook's secret"),
    ("POST /api/v1/instances/{id}/cancel", "Canceled a run"),
    ("POST /api/v1/instances/{id}/pause", "Paused a run"),
    ("POST /api/v1/instances/{id}/resume", "Resumed a run"),
    ("POST /api/v1/instances/{id}/retry", "Retried a run"),
    ("POST /api/v1/instances/{id}/signal", "Signaled a run"),
    ("DELETE /api/v1/instances/{id}", "Purged a run"),
    ("POST /api/v1/instances/retry", "Started a bulk retry"),
    ("POST /api/v1/instances/cancel", "Started a bulk cancel"),
    ("POST /api/v1/instances/purge", "Started a bulk purge"),
    ("POST /api/v1/jobs/{id}/cancel", "Canceled a bulk job"),
    ("POST /api/v1/secrets", "Created a secret"),
    ("PUT /api/v1/secrets/{name}", "Replaced a secret's value"),
    ("DELETE /api/v1/secrets/{name}", "Deleted a secret"),
    ("POST /api/v1/alerts", "Created an alert rule"),
    ("DELETE /api/v1/alerts/{id}", "Deleted an alert rule"),
    ("POST /api/v1/alerts/{id}/test", "Sent a test alert"),
    ("POST /api/v1/views", "Saved a view"),
    ("DELETE /api/v1/views/{id}", "Deleted a view"),
    ("POST /api/v1/users", "Created a user"),
    ("PATCH /api/v1/users/{id}", "Changed a user"),
    ("DELETE /api/v1/users/{id}", "Deleted a user"),
    ("POST /api/v1/api-keys", "Created an API key"),
    ("DELETE /api/v1/api-keys/{id}", "Revoked an API key"),
    ("PUT /api/v1/retention", "Set the retention policy"),
    ("POST /api/v1/auth/login", "Signed in"),
    ("POST /api/v1/auth/logout", "Signed out"),
    ("POST /api/v1/tasks/{id}/complete", "A worker completed a task"),
    ("POST /api/v1/tasks/{id}/fail", "A worker failed a task"),
];

/// What `action` did, in words, or `None` for an action the table does not name.
pub fn describe(action: &str) -> Option<&'static str> {
    ACTIONS.iter().find(|(recorded, _)| *recorded == action).map(|(_, words)| *words)
}

/// The page of an entry's target: the workflow or the run its route names (a start's target is
/// its workflow, the route's `{id}`; a create's is the id it answered with).
pub fn target_page(action: &str, target: &str) -> Option<String> {
    let route = action.split_once(' ')?.1;
    if route.starts_with("/api/v1/workflows/{id}") || route == "/api/v1/workflows" {
        Some(crate::urls::designer_page(target))
    } else if route.starts_with("/api/v1/instances/{id}") {
        Some(crate::urls::instance_page(target))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_what_was_done_and_unknown_ones_stay_as_recorded() {
        assert_eq!(describe("POST /api/v1/workflows/{id}/versions"), Some("Published a version"));
        assert_eq!(describe("PUT /api/v1/workflows/{id}/draft"), Some("Saved a draft"));
        assert_eq!(describe("POST /api/v1/something/new"), None);
    }

    #[test]
    fn a_target_opens_its_workflow_or_its_run() {
        let publish = target_page("POST /api/v1/workflows/{id}/versions", "w1").unwrap();
        assert!(publish.ends_with("/workflows/w1"), "{publish}");
        let cancel = target_page("POST /api/v1/instances/{id}/cancel", "i1").unwrap();
        assert!(cancel.ends_with("/instances/i1"), "{cancel}");
        assert_eq!(target_page("DELETE /api/v1/secrets/{name}", "TOKEN"), None);
    }
}
