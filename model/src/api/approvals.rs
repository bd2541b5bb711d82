//! Approvals (`/approvals`): what an `approval` node asks of people, who may answer, and what
//! they answered.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who may decide: users by name, everyone with a role (or a higher one), members of a group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Assignees {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

impl Assignees {
    pub fn is_empty(&self) -> bool {
        self.users.is_empty() && self.roles.is_empty() && self.groups.is_empty()
    }

    /// Whether a person with this name, role and groups is one of them (a role names everyone
    /// with it or a higher one: roles include the ones below them).
    pub fn includes(&self, user: &str, role: crate::Role, groups: &[String]) -> bool {
        self.users.iter().any(|u| u == user)
            || self.roles.iter().filter_map(|r| r.parse::<crate::Role>().ok()).any(|r| role >= r)
            || self.groups.iter().any(|g| groups.contains(g))
    }
}

/// Where an approval stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for decisions.
    Open,
    Approved,
    Rejected,
    /// Its `timeout_ms` passed before it was decided.
    TimedOut,
    /// Its run ended (canceled, timed out, failed elsewhere) or moved on before it was decided.
    Canceled,
}

crate::status::string_forms!(ApprovalStatus {
    Open => "open", Approved => "approved", Rejected => "rejected", TimedOut => "timed_out", Canceled => "canceled",
});

impl ApprovalStatus {
    pub fn is_open(self) -> bool {
        self == Self::Open
    }
}

/// What one person decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    Reject,
}

impl Verdict {
    /// As a request writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Reject => "reject",
        }
    }

    /// As the node's output and the decision list write it.
    pub fn past(self) -> &'static str {
        match self {
            Self::Approve => "approved",
            Self::Reject => "rejected",
        }
    }

    pub fn parse_past(s: &str) -> Option<Self> {
        match s {
            "approved" => Some(Self::Approve),
            "rejected" => Some(Self::Reject),
            _ => None,
        }
    }
}

/// One decision, as the node's output lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalDecision {
    pub user: String,
    /// `approved` or `rejected`.
    pub decision: String,
    /// The answer to the approval's `form` (`null` without one).
    pub response: Value,
    pub comment: Option<String>,
    pub at: DateTime<Utc>,
}

/// An approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Approval {
    pub id: String,
    pub instance_id: String,
    pub workflow_id: String,
    pub workflow_name: String,
    /// The `approval` node's id.
    pub node: String,
    pub attempt: i32,
    pub title: String,
    pub description: Option<String>,
    pub assignees: Assignees,
    /// Approvals that close it as approved.
    pub required: u32,
    pub allow_starter: bool,
    /// A JSON Schema the response must meet, when the node has one.
    pub form: Option<Value>,
    pub status: ApprovalStatus,
    pub decisions: Vec<ApprovalDecision>,
    /// Who started its instance (a username, `key:<name>`, or `None` for a trigger or a parent).
    pub started_by: Option<String>,
    pub created_at: DateTime<Utc>,
    /// When it times out, if it does.
    pub due_at: Option<DateTime<Utc>>,
    pub closed_at: Option<DateTime<Utc>>,
    /// Whether the caller may decide it now (an assignee, not the starter unless allowed, not
    /// decided yet, and it is open).
    pub can_decide: bool,
}

/// `GET /approvals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalList {
    pub items: Vec<Approval>,
    /// Pass as `cursor` for the next page; `None` on the last.
    pub next_cursor: Option<String>,
}

/// `GET /approvals/count`: what the header's badge shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalCount {
    /// Open approvals the caller may decide.
    pub mine: u64,
}

/// `POST /approvals/{id}/decision`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    pub decision: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The longest comment kept (longer → 413).
pub const MAX_COMMENT_BYTES: usize = 10_000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Role;

    #[test]
    fn a_role_includes_everyone_above_it() {
        let a = Assignees { roles: vec!["operator".into()], ..Default::default() };
        assert!(a.includes("x", Role::Admin, &[]));
        assert!(a.includes("x", Role::Operator, &[]));
        assert!(!a.includes("x", Role::Viewer, &[]));
        let g = Assignees { groups: vec!["finance".into()], users: vec!["bob".into()], ..Default::default() };
        assert!(g.includes("y", Role::Viewer, &["finance".into()]));
        assert!(g.includes("bob", Role::Viewer, &[]));
        assert!(!g.includes("y", Role::Admin, &["ops".into()]));
    }

    #[test]
    fn statuses_read_back() {
        for s in ["open", "approved", "rejected", "timed_out", "canceled"] {
            assert_eq!(ApprovalStatus::parse(s).unwrap().as_str(), s);
            assert_eq!(serde_json::to_value(ApprovalStatus::parse(s).unwrap()).unwrap(), s);
        }
    }
}
