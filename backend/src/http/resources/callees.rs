//! The checks of `subworkflow` nodes that need the store, beside the model's validator:
//! the called workflow must exist, not be archived, and have the version the node runs; and
//! publishing refuses workflows that start each other in a cycle (`cycles.rs`).

use crate::engine::validate::{check_limits, check_secrets, validate};
use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use trellis_model::config::{subworkflow_target, NodeKind, VersionRef};
use trellis_model::map::map_target;
use trellis_model::{Definition, Issue, Report};
use uuid::Uuid;

/// Validates `definition` as workflow `own`'s to publish: the definition's own rules and,
/// once it is sound, what needs the store — the workflows it calls, its failure handler, and
/// cycles of workflows starting each other.
pub async fn validate_for_publish(state: &AppState, own: Uuid, definition: &Definition) -> ApiResult<Report> {
    let mut report = validate(definition, &state.limits, state.engine.sandbox()).await?;
    check_secrets(&mut report, definition, &known_secrets(state).await?);
    check_limits(&mut report, definition, &known_limits(state, definition).await?);
    let assignees = super::approval_checks::issues(state, definition).await?;
    report.valid &= assignees.is_empty();
    report.errors.extend(assignees);
    if report.valid {
        report.errors.extend(callee_issues(state, own, definition).await?);
        report.errors.extend(super::failure_handler_checks::issues(state, own, definition).await?);
        report.errors.extend(super::cycles::cycle_issues(state, own, definition).await?);
        report.valid = report.errors.is_empty();
    }
    Ok(report)
}

/// The names of the secrets that exist, for references to be checked against.
pub async fn known_secrets(state: &AppState) -> ApiResult<std::collections::BTreeSet<String>> {
    Ok(state.store.list_secrets().await?.into_iter().map(|s| s.name).collect())
}

/// Which of the shared limits `definition` names exist.
async fn known_limits(state: &AppState, definition: &Definition) -> ApiResult<std::collections::BTreeSet<String>> {
    let named: Vec<String> = trellis_model::shared_limit::named_limits(definition).into_iter().map(|n| n.3).collect();
    if named.is_empty() {
        return Ok(Default::default());
    }
    Ok(state.store.existing_limits(&named).await?.into_iter().collect())
}

/// What is wrong with the workflows `definition` (of workflow `own`) calls, each reported at
/// `nodes[i].config.workflow` (or `.version`). A call of `own` is a cycle (`cycles.rs`).
async fn callee_issues(state: &AppState, own: Uuid, definition: &Definition) -> ApiResult<Vec<Issue>> {
    let mut issues = Vec::new();
    for (i, node, workflow, version) in calls(definition).into_iter().filter(|c| c.2 != own) {
        let at = |field: &str| format!("nodes[{i}].config.{field}");
        let issue = |code: &str, message: String, field: &str| Issue::new(code, message).node(node).path(at(field));
        let Some(record) = state.store.get_workflow(workflow).await? else {
            issues.push(issue("unknown_workflow", format!("no workflow with id {workflow}"), "workflow"));
            continue;
        };
        if let Err(problems) = crate::engine::callee::resolve(&record, version) {
            let callee = format!("the workflow `{}`", record.name);
            issues.extend(problems.into_iter().map(|p| issue(p.code(), p.describe(&callee), p.field())));
        }
    }
    Ok(issues)
}

/// The nodes of `definition` that call a workflow with a well-formed target (a `subworkflow`
/// node; a `map` over a workflow, or over a `subworkflow` node): (index, node id, workflow,
/// version). Malformed ones are the model validator's to report.
pub(super) fn calls(definition: &Definition) -> Vec<(usize, &str, Uuid, VersionRef)> {
    definition
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| {
            let (workflow, version) = match NodeKind::parse(&n.kind)? {
                NodeKind::Subworkflow => subworkflow_target(&n.config)?,
                NodeKind::Map => map_target(&n.config).or_else(|| {
                    let inner = n.config.get("node")?;
                    let called = inner.get("type")? == NodeKind::Subworkflow.as_str();
                    called.then(|| subworkflow_target(inner.get("config")?)).flatten()
                })?,
                _ => return None,
            };
            Some((i, n.id.as_str(), workflow.trim().parse().ok()?, version))
        })
        .collect()
}
