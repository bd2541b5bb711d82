//! Publishing refuses workflows that would start one another in a cycle. A workflow starts
//! another by calling it (a `subworkflow` node, a `map` over it or over a `subworkflow` node)
//! or by naming it its failure handler; a cycle may mix both (A's handler H calls A), so the
//! search follows both links at once. Each workflow is followed in the version it would run —
//! its latest published one, or the pinned one — and the workflow being published in its
//! draft; a cycle is by workflow, whatever the versions. The run-time bound on lineage
//! (`engine/lineage.rs`) is the guarantee: a cycle made behind these checks still ends.

use super::callees::calls;
use super::failure_handler_checks::{handler_of, AT as HANDLER_AT};
use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use std::collections::HashMap;
use trellis_model::config::VersionRef;
use trellis_model::{Definition, Issue};
use uuid::Uuid;

/// Workflows a cycle search reads at most: a bound on the store reads one publish makes.
const MAX_VISITED: usize = 500;

/// How one workflow starts another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Call,
    Handler,
}

/// The cycles publishing `draft` as `workflow` would make, one issue per link of the draft that
/// closes one, at that link's node or field.
pub async fn cycle_issues(state: &AppState, workflow: Uuid, draft: &Definition) -> ApiResult<Vec<Issue>> {
    let mut search = CycleSearch { state, root: workflow, names: HashMap::new(), done: Vec::new() };
    let mut issues = Vec::new();
    for (i, node, callee, version) in calls(draft) {
        if let Some(cycle) = search.cycle_through(callee, version, Link::Call).await? {
            issues.push(cycle.issue().node(node).path(format!("nodes[{i}].config.workflow")));
        }
    }
    // A workflow naming itself its handler is `failure_handler_checks`' to report.
    for (handler, version) in handler_of(draft).into_iter().filter(|(h, _)| *h != workflow) {
        if let Some(cycle) = search.cycle_through(handler, version, Link::Handler).await? {
            issues.push(cycle.issue().path(HANDLER_AT));
        }
    }
    Ok(issues)
}

/// The workflows a definition starts, each at the version it would run, and how.
fn links(definition: &Definition) -> Vec<(Uuid, VersionRef, Link)> {
    let called = calls(definition).into_iter().map(|(_, _, workflow, version)| (workflow, version, Link::Call));
    let handler = handler_of(definition).into_iter().map(|(workflow, version)| (workflow, version, Link::Handler));
    called.chain(handler).collect()
}

/// A cycle found: the workflows' names from the root back to it, and the link into each
/// after the root.
struct Cycle {
    names: Vec<String>,
    links: Vec<Link>,
}

impl Cycle {
    /// The issue naming the cycle in order, each handler link said as such, coded by the
    /// draft's own link (the one the person publishing can change).
    fn issue(&self) -> Issue {
        let code = match self.links[0] {
            Link::Call => "workflow_cycle",
            Link::Handler => "failure_handler_cycle",
        };
        let only = |kind: Link| self.links.iter().all(|l| *l == kind);
        let plain = self.names.join(" → ");
        let message = if only(Link::Call) {
            format!("workflow cycle: {plain}")
        } else if only(Link::Handler) {
            format!("failure handler cycle: {plain}")
        } else {
            let mut text = self.names[0].clone();
            for (at, link) in self.links.iter().enumerate() {
                let (from, to) = (&self.names[at], &self.names[at + 1]);
                match link {
                    Link::Call => text.push_str(&format!(" → {to}")),
                    Link::Handler => text.push_str(&format!(" → {to} ({from}'s failure handler)")),
                }
            }
            format!("cycle of workflows calling one another and failure handlers: {text}")
        };
        Issue::new(code, message)
    }
}

struct CycleSearch<'a> {
    state: &'a AppState,
    root: Uuid,
    names: HashMap<Uuid, String>,
    /// Workflows already searched without finding the way back.
    done: Vec<Uuid>,
}

impl CycleSearch<'_> {
    /// The cycle going to `workflow` (at `version`, by `link`) from the root makes, if any.
    async fn cycle_through(&mut self, workflow: Uuid, version: VersionRef, link: Link) -> ApiResult<Option<Cycle>> {
        let mut path = vec![(self.root, link)];
        if !self.leads_back(workflow, version, link, &mut path).await? {
            return Ok(None);
        }
        let mut names = Vec::new();
        for (id, _) in &path {
            names.push(self.name(*id).await?);
        }
        Ok(Some(Cycle { names, links: path[1..].iter().map(|(_, link)| *link).collect() }))
    }

    /// Whether going to `workflow` (at `version`) leads back to the root; `path` then holds the
    /// cycle from the root back to it, each workflow with the link into it.
    async fn leads_back(
        &mut self,
        workflow: Uuid,
        version: VersionRef,
        link: Link,
        path: &mut Vec<(Uuid, Link)>,
    ) -> ApiResult<bool> {
        path.push((workflow, link));
        if workflow == self.root {
            return Ok(true);
        }
        let on_path = path[..path.len() - 1].iter().any(|(id, _)| *id == workflow);
        if self.done.contains(&workflow) || on_path || self.done.len() > MAX_VISITED {
            // Searched already, or a cycle not through the root (its own publish refused it).
            path.pop();
            return Ok(false);
        }
        if let Some(definition) = self.definition(workflow, version).await? {
            for (next, version, link) in links(&definition) {
                if Box::pin(self.leads_back(next, version, link, path)).await? {
                    return Ok(true);
                }
            }
        }
        self.done.push(workflow);
        path.pop();
        Ok(false)
    }

    /// The definition going to `workflow` at `version` runs; none if it cannot run.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_is_named_in_order_saying_which_link_is_a_handler() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let calls = Cycle { names: names(&["A", "B", "A"]), links: vec![Link::Call, Link::Call] };
        assert_eq!(
            (calls.issue().code.as_str(), calls.issue().message.as_str()),
            ("workflow_cycle", "workflow cycle: A → B → A")
        );
        let handlers = Cycle { names: names(&["A", "B", "A"]), links: vec![Link::Handler, Link::Handler] };
        assert_eq!(handlers.issue().message, "failure handler cycle: A → B → A");
        let mixed = Cycle { names: names(&["A", "H", "A"]), links: vec![Link::Handler, Link::Call] };
        assert_eq!(mixed.issue().code, "failure_handler_cycle");
        assert_eq!(
            mixed.issue().message,
            "cycle of workflows calling one another and failure handlers: A → H (A's failure handler) → A"
        );
    }
}
