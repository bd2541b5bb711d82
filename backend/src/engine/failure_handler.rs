//! Failure handlers (`settings.on_failure`): when an instance ends `failed` or `timed_out`,
//! the transaction that ends it writes an `on_failure` work item (`bad_end`, called from
//! `effects`), so the handler cannot be missed by a crash between the end and the start. The
//! item's handler (`start_failure_handler`) starts the handler workflow through the normal
//! start path under the idempotency key `on_failure:{instance}:{run}`: a redone item (its
//! process died before consuming it) finds the run it started, and each failed run of a
//! retried instance gets its own. A handler that cannot start is noted on the failed
//! instance's history; passing trouble (the database) leaves the item to be claimed again.
//! A hook of its own (`FailureHandlers`): it holds the store's instances and catalog, the start
//! command, the bus (for its note) and the public URL, and nothing of the runner that hands it
//! the item.

use super::commands::Commands;
use super::error::EngineError;
use super::lineage::Lineage;
use super::plan::Plan;
use super::start_request::StartRequest;
use crate::events::EventBus;
use crate::store::{CatalogStore, Fence, InstanceRow, InstanceStore, NewEvent, RunEnd, TransitionOutcome, Writes};
use chrono::Utc;
use serde_json::{json, Value};
use std::sync::Arc;
use trellis_model::config::VersionRef;
use trellis_model::definition::MAX_FAILURE_HANDLER_DEPTH;
use trellis_model::trace::{EventKind, InstanceChange};
use uuid::Uuid;

/// Why a handler was not started, for the failed instance's history.
type NotStarted = String;

pub(super) struct FailureHandlers {
    /// The failed instance, read and noted on.
    instances: Arc<dyn InstanceStore>,
    /// Resolves the handler workflow's version.
    catalog: Arc<dyn CatalogStore>,
    commands: Arc<Commands>,
    bus: Arc<EventBus>,
    /// `TRELLIS_PUBLIC_URL`: the base of the instance link a handler gets.
    public_url: Option<String>,
}

impl FailureHandlers {
    pub(super) fn new(
        instances: Arc<dyn InstanceStore>,
        catalog: Arc<dyn CatalogStore>,
        commands: Arc<Commands>,
        bus: Arc<EventBus>,
        public_url: Option<String>,
    ) -> FailureHandlers {
        FailureHandlers { instances, catalog, commands, bus, public_url }
    }

    /// Starts the handler of the failed run the item stands for, then consumes the item (or
    /// notes on the instance why no handler started). An error leaves the item to its lease.
    pub(super) async fn start(
        &self,
        (instance, fence): (Uuid, &Fence),
        end: &RunEnd,
        plan: &Plan,
    ) -> anyhow::Result<()> {
        let Some(snapshot) = self.instances.get_instance(instance).await? else { return Ok(()) };
        let failed = snapshot.instance;
        let note = match self.try_start_handler(&failed, plan, end).await {
            Ok(()) => None,
            Err(Ok(not_started)) => Some(not_started),
            Err(Err(transient)) => return Err(transient),
        };
        let events: Vec<NewEvent> = note.iter().map(|note| note_event(&failed, note)).collect();
        if let Some(note) = &note {
            tracing::warn!(instance = %failed.id, "{note}");
        }
        let writes = Writes { events, ..Writes::default() };
        let outcome = self.instances.transition(failed.id, Some(fence), &|_| writes.clone()).await?;
        if let TransitionOutcome::Applied(applied) = outcome {
            if let Some(seq) = applied.first_seq.filter(|_| !applied.events.is_empty()) {
                self.bus.committed(failed.id, failed.workflow_id, seq, &applied.events);
            }
        }
        Ok(())
    }

    /// `Err(Ok(why))`: no handler starts, for good; `Err(Err(_))`: passing trouble.
    async fn try_start_handler(
        &self,
        failed: &InstanceRow,
        plan: &Plan,
        end: &RunEnd,
    ) -> Result<(), Result<NotStarted, anyhow::Error>> {
        let Some(handler) = &plan.on_failure else { return Ok(()) };
        let named = |why: String| Err(Ok(format!("the failure handler was not started: {why}")));
        let Ok(workflow) = Uuid::parse_str(&handler.workflow) else {
            return named(format!("`{}` is not a workflow id", handler.workflow));
        };
        let Some(lineage) = Lineage::of(failed).handler() else {
            let root = super::lineage::root(&*self.instances, failed).await;
            return named(format!(
                "the chain of failure handlers is {MAX_FAILURE_HANDLER_DEPTH} deep, its limit: the chain of instances \
                 started by one another (sub-workflows and failure handlers) began at instance {root}"
            ));
        };
        let version = match self.handler_version(workflow, handler.version).await? {
            Ok(version) => version,
            Err(why) => return named(why),
        };
        let run = end.run;
        let request = StartRequest {
            version: Some(version),
            idempotency_key: Some(format!("on_failure:{}:{run}", failed.id)),
            handles_failure_of: Some(failed.id),
            lineage,
            // Whoever started the failed run started its handling too (an approval's
            // `allow_starter` reads it).
            started_by: failed.started_by.clone(),
            ..StartRequest::new(workflow, self.handler_input(failed, plan, end))
        };
        match self.commands.start(request).await {
            Ok(started) => {
                tracing::info!(instance = %failed.id, handler = %started.id, "failure handler started");
                Ok(())
            }
            Err(
                e @ (EngineError::Store(_)
                | EngineError::Internal(_)
                | EngineError::Unavailable(_)
                | EngineError::Busy(_)
                | EngineError::LimitReached(_)
                | EngineError::RateLimited { .. }),
            ) => Err(Err(anyhow::anyhow!("starting the failure handler: {e}"))),
            Err(e) => named(e.to_string()),
        }
    }

    /// The version the handler runs (`latest` resolved now), or why it cannot run.
    async fn handler_version(
        &self,
        workflow: Uuid,
        version: VersionRef,
    ) -> Result<Result<i64, NotStarted>, Result<NotStarted, anyhow::Error>> {
        super::callee::version_to_run(&*self.catalog, workflow, version, "the workflow")
            .await
            .map_err(|e| Err(e.into()))
    }

    /// `{"instance": {...}}`: what the handler gets to know about the failed run.
    fn handler_input(&self, failed: &InstanceRow, plan: &Plan, end: &RunEnd) -> Value {
        let path = format!("/instances/{}", failed.id);
        let url = match self.public_url.as_deref() {
            Some(base) => format!("{}{path}", base.trim_end_matches('/')),
            None => path,
        };
        json!({"instance": {
            "id": failed.id,
            "workflow_id": failed.workflow_id,
            "workflow_name": plan.name,
            "version": failed.version,
            "status": end.status,
            "error": end.error,
            "failed_node": end.failed_node,
            "input": failed.input.0,
            "url": url,
        }})
    }
}

/// A history entry on the failed instance saying why its handler did not start (its status
/// unchanged).
fn note_event(failed: &InstanceRow, note: &str) -> NewEvent {
    let status = failed.status.as_str().to_owned();
    let change = InstanceChange {
        workflow_id: failed.workflow_id.to_string(),
        status: status.clone(),
        previous: Some(status),
        error: None,
        note: Some(note.to_owned()),
    };
    NewEvent { kind: EventKind::Instance, at: Utc::now(), data: serde_json::to_value(change).unwrap_or(Value::Null) }
}
