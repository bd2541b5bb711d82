//! The checks of `subworkflow` nodes that need the store, beside the model's validator:
//! the called workflow must exist, not be archived, and have the version the node runs; and
//! publishing refuses workflows that call each other in a cycle (A → B → A, or A → A).

use crate::engine::validate::{check_secrets, validate};
use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use std::collections::HashMap;
use trellis_model::config::{subworkflow_target, NodeKind, VersionRef};
use trellis_model::map::map_target;
use trellis_model::{Definition, Issue, Report};
use uuid::Uuid;

/// Workflows a cycle search reads at most: a bound on the store reads one publish makes.
const MAX_VISITED: usize = 500;

/// Validates `definition` as workflow `own`'s to publish: the definition's own rules and,
/// once it is sound, what needs the store — the workflows its `subworkflow` nodes call, and
/// cycles of workflows calling each other.
pub async fn validate_for_publish(state: &AppState, own: Uuid, definition: &Definition) -> ApiResult<Report> {
    let mut report = validate(definition, &state.limits, state.engine.sandbox()).await?;
    check_secrets(&mut report, definition, &known_secrets(state).await?);
    if report.valid {
        report.errors.extend(callee_issues(state, own, definition).await?);
        report.errors.extend(cycle_issue(state, own, definition).await?);
        report.errors.extend(super::failure_handler_checks::issues(state, own, definition).await?);
        report.valid = report.errors.is_empty();
    }
    Ok(report)
}

/// The names of the secrets that exist, for references to be checked against.
pub async fn known_secrets(state: &AppState) -> ApiResult<std::collections::BTreeSet<String>> {
    Ok(state.store.list_secrets().await?.into_iter().map(|s| s.name).collect())
}

/// What is wrong with the workflows `definition` (of workflow `own`) calls, each reported at
/// `nodes[i].config.workflow` (or `.version`). A call of `own` is [`cycle_issue`]'s to report.
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

/// A cycle of workflows calling each other that publishing `draft` as `workflow` would make,
/// as an issue naming it ("workflow cycle: A → B → A"). Callees are followed in the version
/// they run — their latest published one, or the pinned one — and `workflow` itself in the
/// draft being published; a cycle is by workflow, whatever the versions.
async fn cycle_issue(state: &AppState, workflow: Uuid, draft: &Definition) -> ApiResult<Option<Issue>> {
    let mut search = CycleSearch::new(state, workflow, |d| calls(d).into_iter().map(|c| (c.2, c.3)).collect());
    for (i, node, callee, version) in calls(draft) {
        if let Some(names) = search.cycle_through(callee, version).await? {
            let message = format!("workflow cycle: {}", names.join(" → "));
            return Ok(Some(
                Issue::new("workflow_cycle", message).node(node).path(format!("nodes[{i}].config.workflow")),
            ));
        }
    }
    Ok(None)
}

/// The workflows a definition leads to, each at the version it would run: what a cycle is
/// made of (the workflows it calls, or its failure handler).
pub(super) type Follow = fn(&Definition) -> Vec<(Uuid, VersionRef)>;

pub(super) struct CycleSearch<'a> {
    state: &'a AppState,
    root: Uuid,
    follow: Follow,
    names: HashMap<Uuid, String>,
    /// Workflows already searched without finding the way back.
    done: Vec<Uuid>,
}

impl<'a> CycleSearch<'a> {
    pub(super) fn new(state: &'a AppState, root: Uuid, follow: Follow) -> Self {
        CycleSearch { state, root, follow, names: HashMap::new(), done: Vec::new() }
    }

    /// The names of the workflows of the cycle, root first and last, if going to `workflow`
    /// (at `version`) from the root leads back to it.
    pub(super) async fn cycle_through(
        &mut self,
        workflow: Uuid,
        version: VersionRef,
    ) -> ApiResult<Option<Vec<String>>> {
        let mut path = vec![self.root];
        if !self.leads_back(workflow, version, &mut path).await? {
            return Ok(None);
        }
        let mut names = Vec::new();
        for id in &path {
            names.push(self.name(*id).await?);
        }
        Ok(Some(names))
    }

    /// Whether calling `workflow` (at `version`) leads back to the root; `path` then holds the
    /// cycle from the root back to it.
    async fn leads_back(&mut self, workflow: Uuid, version: VersionRef, path: &mut Vec<Uuid>) -> ApiResult<bool> {
        path.push(workflow);
        if workflow == self.root {
            return Ok(true);
        }
        if self.done.contains(&workflow) || path[..path.len() - 1].contains(&workflow) || self.done.len() > MAX_VISITED
        {
            // Searched already, or a cycle not through the root (its own publish refused it).
            path.pop();
            return Ok(false);
        }
        if let Some(definition) = self.definition(workflow, version).await? {
            for (callee, version) in (self.follow)(&definition) {
                if Box::pin(self.leads_back(callee, version, path)).await? {
                    return Ok(true);
                }
            }
        }
        self.done.push(workflow);
        path.pop();
        Ok(false)
    }

    /// The definition a call to `workflow` at `version` runs; none if it cannot run.
    async fn definition(&mut self, workflow: Uuid, version: VersionRef) -> ApiResult<Option<Definition>> {
        let Some(record) = self.state.store.get_workflow(workflow).await? else { return Ok(None) };
        self.names.insert(workflow, record.name);
        let number = match version {
            VersionRef::Latest => record.latest_version,
            VersionRef::Pinned(n) => Some(n),
        };
        let Some(number) = number else { return Ok(None) };
        Ok(self.state.store.get_version(workflow, number).await?.map(|v| v.definition.0))
    }

    async fn name(&mut self, workflow: Uuid) -> ApiResult<String> {
        if let Some(name) = self.names.get(&workflow) {
            return Ok(name.clone());
        }
        let name = self.state.store.get_workflow(workflow).await?.map_or_else(|| workflow.to_string(), |w| w.name);
        self.names.insert(workflow, name.clone());
        Ok(name)
    }
}

/// The nodes of `definition` that call a workflow with a well-formed target (a `subworkflow`
/// node; a `map` over a workflow, or over a `subworkflow` node): (index, node id, workflow,
/// version). Malformed ones are the model validator's to report.
fn calls(definition: &Definition) -> Vec<(usize, &str, Uuid, VersionRef)> {
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
