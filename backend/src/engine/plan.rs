//! A validated definition prepared for execution: nodes in topological order with their
//! incoming and outgoing edges, computed once per version rather than on every event.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use trellis_model::config::NodeKind;
use trellis_model::{Definition, EdgeWhen, Node, RetryPolicy};

/// A node as the engine runs it: its type already parsed (a plan is only built from a
/// validated definition, so every type is known), and what running it needs.
#[derive(Debug, Clone)]
pub struct PlanNode {
    pub id: String,
    pub kind: NodeKind,
    pub config: Value,
    pub retry: Option<RetryPolicy>,
    pub timeout_ms: Option<u64>,
    /// The secrets its texts reference, opened for each attempt (validation refused any
    /// other use of `secret`; a version that has one gets none).
    pub secrets: Vec<String>,
    /// The shared limit its attempts are held to (a map's: each item's).
    pub limit: Option<String>,
}

impl PlanNode {
    /// `None` when the node's type is not one this build knows.
    fn new(node: &Node) -> Option<PlanNode> {
        let kind = node.known_kind()?;
        let secrets = trellis_model::secret::node_references(kind, &node.config).unwrap_or_default();
        Some(PlanNode {
            id: node.id.clone(),
            kind,
            secrets: secrets.into_iter().collect(),
            config: node.config.clone(),
            retry: node.retry.clone(),
            timeout_ms: effective_timeout(kind, node),
            limit: trellis_model::shared_limit::node_limit(node),
        })
    }
}

/// A node's timeout: its own, or an approval's `timeout_ms` (whichever is sooner): both end
/// the attempt `timed_out` through the same durable timer.
fn effective_timeout(kind: NodeKind, node: &Node) -> Option<u64> {
    let own = match kind {
        NodeKind::Approval => trellis_model::approval::approval_timeout(&node.config),
        _ => None,
    };
    match (node.timeout_ms, own) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// An edge as the engine sees it: indexes into [`Plan::nodes`].
#[derive(Debug, Clone)]
pub struct PlanEdge {
    pub from: usize,
    pub to: usize,
    pub when: EdgeWhen,
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// The workflow it belongs to (nil until the engine's plan cache sets it).
    pub workflow: uuid::Uuid,
    /// The workflow's name when the plan was loaded: the instance span's name.
    pub name: String,
    /// In topological order: every node comes after all of its predecessors.
    pub nodes: Vec<PlanNode>,
    pub incoming: Vec<Vec<PlanEdge>>,
    pub outgoing: Vec<Vec<PlanEdge>>,
    pub max_parallel: usize,
    /// The whole instance's timeout.
    pub timeout_ms: Option<u64>,
    /// `max_concurrent_instances`, and whether starts beyond it are refused.
    pub instance_limit: Option<u32>,
    pub reject_over_limit: bool,
    /// `on_limit: replace` (`reject_over_limit` is set too).
    pub replace_over_limit: bool,
    /// What a start with a business key does about earlier instances with it.
    pub key_reuse: trellis_model::KeyReuse,
    /// The `concurrency_key` expression and its `max_per_key` (1 unless set).
    pub concurrency_key: Option<(String, u32)>,
    /// The workflow started when an instance of this version fails or times out.
    pub on_failure: Option<trellis_model::OnFailure>,
    /// The version's `input_schema`, compiled once here (`Err`: why it does not compile, which
    /// publishing refuses, so only a version published before a schema-crate change can have it).
    pub input_schema: Option<Arc<Result<jsonschema::Validator, String>>>,
    /// `throttle` and `rate_limit`: each window with its key expression.
    pub throttle: Option<trellis_model::flow::Window>,
    pub rate_limit: Option<trellis_model::flow::Window>,
    /// `priority`: a level, or the expression giving one.
    pub priority: Option<trellis_model::flow::Priority>,
    /// `debounce`: bursts of starts folded into one instance.
    pub debounce: Option<trellis_model::flow::Debounce>,
    index: HashMap<String, usize>,
}

impl Plan {
    /// Builds the plan of a definition that passed validation (so it is acyclic and its
    /// edges name existing nodes and every node type is known); returns `None` otherwise.
    pub fn new(def: &Definition) -> Option<Plan> {
        let order = topological_order(def)?;
        let nodes: Vec<PlanNode> = order.iter().map(|&i| PlanNode::new(&def.nodes[i])).collect::<Option<_>>()?;
        let index: HashMap<String, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id.clone(), i)).collect();
        let mut incoming = vec![Vec::new(); nodes.len()];
        let mut outgoing = vec![Vec::new(); nodes.len()];
        for edge in &def.edges {
            let e = PlanEdge { from: index[&edge.from], to: index[&edge.to], when: edge.when.clone() };
            incoming[e.to].push(e.clone());
            outgoing[e.from].push(e);
        }
        let max_parallel = def.settings.max_parallel_nodes.map_or(usize::MAX, |n| n.max(1) as usize);
        let settings = &def.settings;
        Some(Plan {
            workflow: uuid::Uuid::nil(),
            name: String::new(),
            nodes,
            incoming,
            outgoing,
            max_parallel,
            timeout_ms: settings.timeout_ms,
            instance_limit: settings.max_concurrent_instances,
            reject_over_limit: settings.on_limit != trellis_model::OnLimit::Queue,
            replace_over_limit: settings.on_limit == trellis_model::OnLimit::Replace,
            key_reuse: settings.key_reuse,
            on_failure: settings.on_failure.clone(),
            concurrency_key: settings
                .concurrency_key
                .clone()
                .map(|key| (key, settings.max_per_key.unwrap_or(1).max(1))),
            input_schema: settings.input_schema.as_ref().map(|s| Arc::new(super::input_schema::compile(s))),
            throttle: settings.throttle.clone(),
            rate_limit: settings.rate_limit.clone(),
            priority: settings.priority.clone(),
            debounce: settings.debounce.clone(),
            index,
        })
    }

    /// The limits admission holds the workflow to (when this is its latest version's plan).
    pub fn admission(&self) -> crate::store::AdmissionLimits {
        crate::store::AdmissionLimits {
            instances: self.instance_limit,
            per_key: self.concurrency_key.as_ref().map(|(_, n)| *n),
            reject: self.reject_over_limit,
            throttle: self.throttle.as_ref().map(time_window),
            replace: self.replace_over_limit,
        }
    }

    /// Each way `input` violates the version's `input_schema` (none without one).
    pub fn check_input(&self, input: &Value) -> Result<(), super::error::EngineError> {
        let Some(schema) = &self.input_schema else { return Ok(()) };
        let violations = match schema.as_ref() {
            Ok(validator) => super::input_schema::violations(validator, input),
            Err(why) => {
                return Err(super::error::EngineError::Invalid(format!(
                    "the workflow's input_schema does not compile: {why}"
                )))
            }
        };
        match violations.is_empty() {
            true => Ok(()),
            false => {
                Err(super::error::EngineError::InputRejected { detail: violations.detail(), errors: violations.listed })
            }
        }
    }

    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    pub fn max_attempts(&self, node: usize) -> u32 {
        self.nodes[node].retry.as_ref().map_or(1, |r| r.max_attempts.max(1))
    }

    /// The delay before attempt `next` (2, 3, ...): exponential from `backoff_ms`, capped
    /// at `max_backoff_ms`. Jitter is added by the caller, keeping this deterministic.
    pub fn backoff_ms(&self, node: usize, next: u32) -> u64 {
        let Some(retry) = &self.nodes[node].retry else { return 0 };
        let doublings = next.saturating_sub(2).min(32);
        retry.backoff_ms.saturating_mul(1u64 << doublings).min(retry.max_backoff_ms)
    }

    /// Whether a failure of `node` is handled by an edge that reacts to it.
    pub fn handles_failure(&self, node: usize) -> bool {
        self.outgoing[node].iter().any(|e| matches!(e.when, EdgeWhen::Failure | EdgeWhen::Always))
    }
}

/// Kahn's algorithm, keeping definition order among nodes that are ready together so the
/// schedule is deterministic.
fn topological_order(def: &Definition) -> Option<Vec<usize>> {
    let position: HashMap<&str, usize> = def.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    let mut indegree = vec![0usize; def.nodes.len()];
    let mut successors = vec![Vec::new(); def.nodes.len()];
    for edge in &def.edges {
        let (from, to) = (*position.get(edge.from.as_str())?, *position.get(edge.to.as_str())?);
        indegree[to] += 1;
        successors[from].push(to);
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..def.nodes.len()).filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(def.nodes.len());
    while let Some(next) = ready.pop_first() {
        order.push(next);
        for &succ in &successors[next] {
            indegree[succ] -= 1;
            if indegree[succ] == 0 {
                ready.insert(succ);
            }
        }
    }
    (order.len() == def.nodes.len()).then_some(order)
}

/// A setting's window as the store counts it.
pub fn time_window(window: &trellis_model::flow::Window) -> crate::store::TimeWindow {
    crate::store::TimeWindow { limit: window.limit, period_ms: window.period_ms }
}
