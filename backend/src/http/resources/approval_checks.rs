//! The checks of `approval` nodes that need the store, at publish: every user an approval
//! names exists, and its assignees name somebody who does (a group counts once a user is in
//! it: single sign-on users bring theirs at sign-in, and admins give local users groups).

use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use std::collections::BTreeSet;
use trellis_model::approval::ApprovalConfig;
use trellis_model::config::NodeKind;
use trellis_model::{Definition, Issue};

/// A problem per approval node naming a user that does not exist, or naming nobody who does.
pub async fn issues(state: &AppState, definition: &Definition) -> ApiResult<Vec<Issue>> {
    let approvals: Vec<(usize, &str, ApprovalConfig)> = definition
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| NodeKind::parse(&n.kind) == Some(NodeKind::Approval))
        .filter_map(|(i, n)| Some((i, n.id.as_str(), serde_json::from_value(n.config.clone()).ok()?)))
        .collect();
    if approvals.is_empty() {
        return Ok(Vec::new());
    }
    let users = state.store.list_users().await?;
    let keys: Vec<String> = state.store.list_api_keys().await?.into_iter().map(|k| format!("key:{}", k.name)).collect();
    // An API key is named as it decides: `key:<name>`.
    let names: BTreeSet<&str> = users
        .iter()
        .filter(|u| u.disabled_at.is_none())
        .map(|u| u.username.as_str())
        .chain(keys.iter().map(String::as_str))
        .collect();
    let groups: BTreeSet<&str> =
        users.iter().filter(|u| u.disabled_at.is_none()).flat_map(|u| u.groups.0.iter().map(String::as_str)).collect();
    let mut issues = Vec::new();
    for (i, node, config) in approvals {
        let a = &config.assignees;
        for (j, user) in a.users.iter().enumerate().filter(|(_, u)| !names.contains(u.as_str())) {
            let message = format!("there is no user (or `key:` API key) named `{user}`; make it first or fix the name");
            issues.push(
                Issue::new("unknown_assignee", message)
                    .node(node)
                    .path(format!("nodes[{i}].config.assignees.users[{j}]")),
            );
        }
        let somebody = !a.roles.is_empty()
            || a.users.iter().any(|u| names.contains(u.as_str()))
            || a.groups.iter().any(|g| groups.contains(g.as_str()));
        if !somebody && !a.is_empty() {
            let named: Vec<String> = a.users.iter().chain(&a.groups).map(|n| format!("`{n}`")).collect();
            let message = format!(
                "the assignees ({}) name nobody who exists: no such user, and nobody is in such a group",
                named.join(", ")
            );
            issues
                .push(Issue::new("unknown_assignee", message).node(node).path(format!("nodes[{i}].config.assignees")));
        }
    }
    Ok(issues)
}
