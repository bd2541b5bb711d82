//! Running one attempt of a node (the run part's node execution): opens its secrets, runs it
//! through the runtime (a map through `map/`), renewing its lease meanwhile, redacts what it
//! returns, starts the child a `subworkflow` node asks for (`children.rs`), and holds its
//! output to the caps; the event and detail it returns go to the commit path.

use super::children::ChildStart;
use super::context::Seen;
use super::effects::Detail;
use super::machine::Event;
use super::nodes::{Attempt, NodeResult, Suspend};
use super::plan::Plan;
use super::results::{outcome, sanitized};
use super::run::Runner;
use crate::secrets::{Opened, Unavailable};
use crate::store::Fence;
use chrono::Utc;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use trellis_model::config::NodeKind;
use trellis_model::nesting::MAP_RESULTS_WRAP;
use trellis_model::trace::TraceParent;

impl Runner {
    /// Runs one attempt, keeping its lease alive while it runs.
    pub(super) async fn execute(
        self: &Arc<Self>,
        plan: &Plan,
        instance: uuid::Uuid,
        seen: Seen,
        node: usize,
        attempt: u32,
        fence: &Fence,
    ) -> (Event, Detail) {
        let spec = &plan.nodes[node];
        let Seen { context, others_bytes } = seen;
        let traceparent = context.pointer("/instance/trace_id").and_then(Value::as_str).map(|trace_id| {
            let span = super::trace::attempt_span_id(instance, &spec.id, i64::from(attempt));
            TraceParent { trace_id: trace_id.to_owned(), span_id: span, sampled: true }.header()
        });
        let (secrets, refused) = match self.runtime.secrets.open_for_attempt(&spec.secrets).await {
            Ok(opened) => (opened, None),
            Err(e) => (Opened::default(), Some(unavailable(e))),
        };
        let run = Attempt {
            node: spec,
            attempt,
            idempotency_key: format!("{instance}:{}:{attempt}", spec.id),
            traceparent,
            context,
            now: Utc::now(),
            secrets: &secrets,
        };
        let (result, mut logs) = match refused {
            Some(failed) => (failed, Vec::new()),
            None if spec.kind == NodeKind::Map => (
                self.renewing(self.run_map(plan, node, instance, (&run, others_bytes), fence), fence).await,
                Vec::new(),
            ),
            None => self.renewing(self.runtime.run_logged(&run), fence).await,
        };
        // The one place an attempt's result becomes what is stored: every later reader (rows,
        // history, spans, OTLP, failure groups, logs) sees only the redacted form.
        let redactor = secrets.redactor();
        logs.iter_mut().for_each(|line| redactor.string(line));
        let result = match sanitized(result, &redactor) {
            NodeResult::Suspend(Suspend::Child { workflow, version, input }) => {
                let start = ChildStart {
                    parent: instance,
                    node: &spec.id,
                    attempt,
                    traceparent: run.traceparent.as_deref(),
                    workflow,
                    version,
                    input,
                    item: None,
                    redactor: &redactor,
                };
                self.start_child(start).await
            }
            NodeResult::Suspend(Suspend::Approval { title, description }) => {
                self.ask_approval(plan, (instance, spec, attempt), &run.context, (title, description)).await
            }
            other => other,
        };
        // A map's output holds its items' (each held to the limit) in `results`.
        let room = if spec.kind == NodeKind::Map { MAP_RESULTS_WRAP } else { 0 };
        let result = self.capped(result, &spec.id, others_bytes, room);
        let (event, mut detail) = outcome(result, node, attempt, &spec.id);
        detail.started_at = Some(run.now);
        detail.logs = logs;
        (event, detail)
    }

    /// Runs an attempt's `work`, renewing the attempt's lease while it runs.
    async fn renewing<T>(&self, work: impl std::future::Future<Output = T>, fence: &Fence) -> T {
        let running = work;
        tokio::pin!(running);
        // The first renewal a third of a lease from now. (Not `interval`: awaiting its
        // immediate first tick goes through the timer wheel, about a millisecond — which
        // was a third of every step of a chain of no-op nodes.)
        let period = self.workers.lease().to_std().unwrap_or(Duration::from_secs(30)) / 3;
        let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        loop {
            tokio::select! {
                ran = &mut running => break ran,
                _ = renew.tick() => {
                    let _ = self.work.extend_lease(fence, Utc::now() + self.workers.lease()).await;
                }
            }
        }
    }

    /// Fails an attempt whose output (or task input) is over the caps on what an instance
    /// stores. `others_bytes`: the JSON bytes of the instance's other outputs, counted for the
    /// node types that read their instance (none for the rest, whose outputs are small and fixed).
    /// `room`: the levels of nesting Trellis itself wrapped around the output's values.
    fn capped(&self, result: NodeResult, node: &str, others_bytes: usize, room: usize) -> NodeResult {
        let caps = self.output_caps;
        let checked = match &result {
            NodeResult::Done { output, .. } => caps.check(node, output, others_bytes, room),
            NodeResult::Suspend(Suspend::Task { input, .. }) => {
                caps.check(node, input, 0, 0).map_err(|e| format!("the task's input: {e}"))
            }
            _ => Ok(()),
        };
        match checked {
            Ok(()) => result,
            Err(error) => NodeResult::Failed { error, retryable: false },
        }
    }
}

/// An attempt whose secrets could not be opened fails naming the secret (never a value): for
/// good when it is missing or does not open, per the retry policy when the store is away.
fn unavailable(e: Unavailable) -> NodeResult {
    let retryable = matches!(e, Unavailable::Store(_));
    NodeResult::Failed { error: e.to_string(), retryable }
}
