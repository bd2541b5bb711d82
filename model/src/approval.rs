//! The `approval` node's config: a question put to people, who may answer it, how many
//! approvals close it, and the form their answer fills. The engine's side is
//! `backend/src/engine/approvals/`; the inbox's bodies are `api/approvals.rs`.

use crate::api::Assignees;
use crate::config::{templates, ConfigProblem};
use crate::validate::MAX_DURATION_MS;
use crate::SyntaxCheck;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an approval node's edges may act on (`when: "approved"`): the decision that closed it.
pub const OUTCOMES: [&str; 2] = ["approved", "rejected"];

/// The most `required` approvals a node may ask for.
pub const MAX_REQUIRED: u32 = 100;
/// The most names an assignee list may hold, all kinds together.
pub const MAX_ASSIGNEES: usize = 200;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalConfig {
    /// A template over the run (`Refund {{ input.amount }} to {{ input.customer }}?`).
    #[serde(default)]
    pub title: String,
    /// A template too; shown under the title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub assignees: Assignees,
    /// Approvals that close it as approved (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<u32>,
    /// Whether whoever started the instance may decide too.
    #[serde(default)]
    pub allow_starter: bool,
    /// A JSON Schema for the approver's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<Value>,
    /// Past this, the node ends `timed_out` (a durable timer, like a node's own `timeout_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl ApprovalConfig {
    pub fn required(&self) -> u32 {
        self.required.unwrap_or(1)
    }
}

/// The approval's own timeout, from a node's config (for the engine's plan).
pub fn approval_timeout(config: &Value) -> Option<u64> {
    ApprovalConfig::deserialize(config).ok()?.timeout_ms
}

pub(crate) fn check(c: ApprovalConfig, syntax: &mut SyntaxCheck<'_>) -> Vec<ConfigProblem> {
    let mut problems = crate::config::required("title", &c.title);
    problems.extend(templates("title", &Value::String(c.title.clone()), syntax));
    if let Some(description) = &c.description {
        problems.extend(templates("description", &Value::String(description.clone()), syntax));
    }
    problems.extend(check_assignees(&c.assignees));
    if c.required == Some(0) || c.required() > MAX_REQUIRED {
        problems.push(ConfigProblem::at("required", format!("`required` must be 1 to {MAX_REQUIRED} approvals")));
    }
    if let Some(form) = &c.form {
        if !form.is_object() && !form.is_boolean() {
            problems.push(ConfigProblem::at("form", "`form` must be a JSON Schema: an object (or true/false)"));
        }
    }
    if c.timeout_ms == Some(0) || c.timeout_ms.is_some_and(|ms| ms > MAX_DURATION_MS) {
        let message = format!("`timeout_ms` must be 1 to {MAX_DURATION_MS} (ten years); leave it out to wait for ever");
        problems.push(ConfigProblem::at("timeout_ms", message));
    }
    if !a_quorum_is_possible(&c) {
        let (required, named) = (c.required(), c.assignees.users.len());
        let message = format!("`required` is {required} but only {named} users are named, and no role or group");
        problems.push(ConfigProblem::at("required", message));
    }
    problems
}

/// Whether enough people could approve: a role or a group may hold any number; named users
/// only as many as are named.
fn a_quorum_is_possible(c: &ApprovalConfig) -> bool {
    let a = &c.assignees;
    a.is_empty() || !a.roles.is_empty() || !a.groups.is_empty() || a.users.len() >= c.required() as usize
}

fn check_assignees(a: &Assignees) -> Vec<ConfigProblem> {
    let mut problems = Vec::new();
    if a.is_empty() {
        problems.push(ConfigProblem::at(
            "assignees",
            "`assignees` names nobody: give `users`, `roles` or `groups`, e.g. {\"roles\": [\"operator\"]}",
        ));
    }
    if a.users.len() + a.roles.len() + a.groups.len() > MAX_ASSIGNEES {
        problems.push(ConfigProblem::at("assignees", format!("`assignees` may name at most {MAX_ASSIGNEES}")));
    }
    for (i, role) in a.roles.iter().enumerate() {
        if role.parse::<crate::Role>().is_err() {
            problems.push(ConfigProblem::at(
                &format!("assignees.roles[{i}]"),
                format!("`{role}` is not a role: viewer, operator, editor or admin"),
            ));
        }
    }
    let named = a.users.iter().map(|u| ("users", u)).chain(a.groups.iter().map(|g| ("groups", g)));
    for (kind, name) in named {
        if name.trim().is_empty() || name.len() > 256 {
            problems.push(ConfigProblem::at(
                &format!("assignees.{kind}"),
                format!("`assignees.{kind}` holds an empty or over-long name"),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use crate::config::{check_config, NodeKind};
    use serde_json::json;

    fn problems(config: serde_json::Value) -> Vec<String> {
        check_config(NodeKind::Approval, &config).into_iter().map(|p| format!("{}: {}", p.path, p.message)).collect()
    }

    #[test]
    fn a_whole_config_passes() {
        let c = json!({"title": "Refund {{ input.amount }}?", "description": "for {{ input.who }}",
            "assignees": {"users": ["ann"], "roles": ["operator"], "groups": ["finance"]},
            "required": 2, "allow_starter": true, "form": {"type": "object"}, "timeout_ms": 60000});
        assert_eq!(problems(c), Vec::<String>::new());
    }

    #[test]
    fn each_mistake_is_named_at_its_field() {
        let c = json!({"title": "{{ input.", "assignees": {"roles": ["boss"]}, "required": 0, "form": 3,
            "timeout_ms": 0});
        let found = problems(c).join("\n");
        for at in ["config.title", "config.assignees.roles[0]", "config.required", "config.form", "config.timeout_ms"] {
            assert!(found.contains(at), "{at} missing from {found}");
        }
        assert!(problems(json!({"title": "t"})).join("").contains("names nobody"));
        let unreachable = problems(json!({"title": "t", "assignees": {"users": ["a"]}, "required": 2})).join("");
        assert!(unreachable.contains("only 1 users are named"), "{unreachable}");
        let ten_years = crate::validate::MAX_DURATION_MS + 1;
        let too_long = problems(json!({"title": "t", "assignees": {"roles": ["admin"]}, "timeout_ms": ten_years}));
        assert!(too_long.join("").contains("config.timeout_ms"), "{too_long:?}");
        assert!(problems(json!({"assignees": {"users": ["a"]}})).join("").contains("`title` is required"));
    }
}
