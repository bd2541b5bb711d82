//! Which actions the instance page offers: only those the API would accept for the instance's
//! status, and only to a role that may act (`operator`, `editor`, `admin`; a `viewer` only looks).

use trellis_model::{InstanceStatus, Role};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Pause,
    Resume,
    Cancel,
    Retry,
    Purge,
    /// Delivering a signal to a node waiting on `wait_signal`.
    Signal,
}

/// Whether `role` (as `GET /me` has it) may change instances: the server's `AsOperator`.
pub fn may_act(role: Role) -> bool {
    role >= Role::Operator
}

/// Whether `role` may change definitions and their triggers (editors and admins).
pub fn may_edit(role: Role) -> bool {
    role >= Role::Editor
}

/// The actions offered for an instance in `status` to a user with `role` (none while it is
/// not known), in the order shown.
pub fn available(status: InstanceStatus, role: Option<Role>) -> Vec<Action> {
    if !role.is_some_and(may_act) {
        return Vec::new();
    }
    use InstanceStatus as S;
    match status {
        S::Queued => vec![Action::Cancel],
        S::Running => vec![Action::Pause, Action::Cancel, Action::Signal],
        S::Paused => vec![Action::Resume, Action::Cancel, Action::Signal],
        S::Failed | S::Canceled | S::TimedOut => vec![Action::Retry, Action::Purge],
        S::Succeeded => vec![Action::Purge],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use InstanceStatus as S;

    #[test]
    fn a_viewer_gets_no_action_in_any_status() {
        for s in [S::Queued, S::Running, S::Paused, S::Succeeded, S::Failed, S::Canceled, S::TimedOut] {
            assert!(available(s, Some(Role::Viewer)).is_empty(), "{s:?}");
            assert!(available(s, None).is_empty(), "{s:?}");
        }
    }

    #[test]
    fn actions_follow_what_the_api_accepts() {
        for role in [Role::Operator, Role::Editor, Role::Admin].map(Some) {
            assert_eq!(available(S::Running, role), [Action::Pause, Action::Cancel, Action::Signal]);
            assert_eq!(available(S::Paused, role), [Action::Resume, Action::Cancel, Action::Signal]);
            assert_eq!(available(S::Queued, role), [Action::Cancel]);
            for s in [S::Failed, S::Canceled, S::TimedOut] {
                assert_eq!(available(s, role), [Action::Retry, Action::Purge]);
            }
            assert_eq!(available(S::Succeeded, role), [Action::Purge]);
        }
    }
}
