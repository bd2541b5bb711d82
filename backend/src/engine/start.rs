//! Starting instances, keyed or not: idempotency keys, business keys (`key_reuse`),
//! concurrency limits and keys. A start is written by its own store call
//! (`start_instance`), then joins the commit path at its last step (`commit/`, react).

use super::commands::Commands;
use super::control::refuse_nul;
use super::effects::{decide, Detail};
use super::error::EngineError;
use super::json::refuse_deep;
use super::machine::Event;
use super::plan::Plan;
use super::reserve::{runs_to_lease, Reservation};
use super::start_request::{StartRequest, Started};
use super::trace::Tracer;
use crate::store::{AdmitAt, InstanceRow, NewInstance, NodeRow, Snapshot, StartOutcome, Writes};
use chrono::{DateTime, SubsecRound, Utc};
use serde_json::Value;
use sqlx::types::Json;
use std::sync::Arc;
use trellis_model::nesting::{HANDLER_INPUT_WRAP, MAX_JSON_DEPTH};
use trellis_model::{InstanceStatus, KeyReuse, NodeStatus};
use uuid::Uuid;

impl Commands {
    /// Starts an instance. With an `idempotency_key`, repeating the same request returns the
    /// first answer and creates nothing; the same key with a different request is refused.
    pub async fn start(self: &Arc<Self>, request: StartRequest) -> Result<Started, EngineError> {
        let prepared = match self.prepare(request).await? {
            Prepared::Start(prepared) => *prepared,
            Prepared::Debounced(started) => return Ok(started),
        };
        // Once prepared, a start is written and reacted to in a task of its own: a caller
        // that goes away (a dropped request) can neither cut a batch of starts short
        // (`start_lane.rs`) nor leave a written start's first attempts unlaunched.
        let commands = self.clone();
        let written = tokio::spawn(async move {
            let outcome = commands.start_keyed(&prepared.new).await?;
            commands.started(prepared, outcome).await
        });
        written.await.map_err(|e| EngineError::Internal(anyhow::anyhow!("a start's task failed: {e}")))?
    }

    /// Checks the request and builds the instance to insert, with what its admission writes;
    /// or, under the workflow's `debounce`, folds it into its key's burst.
    async fn prepare(&self, request: StartRequest) -> Result<Prepared, EngineError> {
        refuse_nul(&request.input, "the input")?;
        refuse_deep(&request.input, input_depth_limit(&request), "the input")?;
        let size = serde_json::to_vec(&request.input).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > self.max_input_bytes {
            return Err(EngineError::TooLarge(format!(
                "the input is {size} bytes; the limit is {}",
                self.max_input_bytes
            )));
        }
        let (version, latest) = self.versions(request.workflow, request.version).await?;
        let plan = self.plans.get(request.workflow, version).await?;
        // Before anything is written: a violating start creates nothing.
        plan.check_input(&request.input)?;
        // The workflow's concurrency limits (and key) are those of its latest version.
        let limits = self.plans.get(request.workflow, latest).await?;
        let keys = super::start_keys::evaluate(&limits, &request.input, &self.sandbox).await?;
        if let Some(started) = self.fold_into_burst(&request, (&limits, latest), &keys).await? {
            return Ok(Prepared::Debounced(started));
        }
        // Microseconds, as Postgres keeps them (the start is remembered as written).
        let now = Utc::now().trunc_subsecs(6);
        let idempotency_key = request.idempotency_key.clone();
        // A burst's instance was counted when its starts were (`debounce.rs`).
        let from_burst = request.burst.is_some();
        let key_names_instance = request.key_names_instance;
        let rate = keys.rate_check(&limits).filter(|_| !from_burst);
        let row = instance_row(request, version, keys, now);
        let nodes: Vec<NodeRow> = plan
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| NodeRow::fresh(n.id.clone(), i as i32, NodeStatus::Pending))
            .collect();
        let tracer = Tracer { plan: &plan, instance: &row, now };
        let (created_events, queued_events) = (tracer.created(false), tracer.created(true).split_off(1));
        let fresh = Snapshot { instance: row.clone(), nodes: nodes.iter().cloned().map(Arc::new).collect() };
        let mut on_admit = decide(&plan, &fresh, Event::Start, &Detail::default(), now, 0.0);
        // Slots for the start's own first attempts only: held through the start's transaction.
        let reservation = self.workers.reserve(runs_to_lease(&on_admit));
        reservation.lease_runs(&mut on_admit, &self.workers.owner);
        // A limited start is admitted at a time the store reads under the workflow's lock, and
        // decided again at it there (`store/queries/admission_clock.rs`), on the same slots.
        let admit_at = {
            let (plan, leases, owner) = (plan.clone(), reservation.leases_only(), self.workers.owner.clone());
            AdmitAt(Arc::new(move |at| {
                let mut writes = decide(&plan, &fresh, Event::Start, &Detail::default(), at, 0.0);
                leases.lease_runs(&mut writes, &owner);
                writes
            }))
        };
        let request_hash = request_hash(version, &row.input.0, row.business_key.as_deref());
        let idempotency = idempotency_key.map(|k| (k, request_hash.clone()));
        let mut admission = limits.admission();
        if from_burst {
            // Every start of the burst was answered with this instance: it waits for a slot
            // rather than being refused (or replacing another).
            (admission.reject, admission.replace) = (false, false);
        }
        let key_reuse = limits.key_reuse;
        let new = NewInstance {
            row,
            nodes,
            limits: admission,
            on_admit,
            idempotency,
            created_events,
            queued_events,
            key_reuse,
            rate,
            admits_at: now,
            admit_at,
        };
        Ok(Prepared::Start(Box::new(PreparedStart {
            new,
            request_hash,
            plan,
            limits,
            reservation,
            key_names_instance,
        })))
    }

    /// Checks `input` against the latest published version's `input_schema`, as a start would
    /// (nothing published: nothing to check yet; each start checks again).
    pub async fn check_input(&self, workflow: Uuid, input: &Value) -> Result<(), EngineError> {
        let Some(latest) = self.catalog.get_workflow(workflow).await?.and_then(|w| w.latest_version) else {
            return Ok(());
        };
        self.plans.get(workflow, latest).await?.check_input(input)
    }

    /// The version to start (the latest published one unless `version` names another) and
    /// the latest one.
    async fn versions(&self, workflow: Uuid, version: Option<i64>) -> Result<(i64, i64), EngineError> {
        let record = self
            .catalog
            .get_workflow(workflow)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("no workflow with id {workflow}")))?;
        let latest = record
            .latest_version
            .ok_or_else(|| EngineError::Conflict("the workflow has no published version; publish one first".into()))?;
        let version = version.unwrap_or(latest);
        if version < 1 || version > latest {
            return Err(EngineError::NotFound(format!("workflow {workflow} has no version {version}")));
        }
        Ok((version, latest))
    }

    /// Inserts a new instance; under `terminate_if_running`, an instance holding its key is
    /// canceled first, and under `on_limit: replace` the oldest instance holding the slot
    /// (the key's, or the workflow's) it found full. The database's one-live-instance-per-key index decides races: a
    /// start that loses to a concurrent one cancels that one in turn, a bounded number of
    /// times, so the last start wins and no two instances with the key ever run together.
    async fn start_keyed(self: &Arc<Self>, new: &NewInstance) -> Result<StartOutcome, EngineError> {
        const TERMINATE_TRIES: u32 = 10;
        let mut tries = 0;
        loop {
            let outcome = match super::start_lane::batchable(new) {
                true => self.start_lane.start_together(new).await?,
                false => self.instances.start_instance(new).await?,
            };
            match outcome {
                StartOutcome::KeyLive(live)
                    if new.key_reuse == KeyReuse::TerminateIfRunning && tries < TERMINATE_TRIES =>
                {
                    tries += 1;
                    if let Some(live) = live {
                        // Already finished (or canceled by a concurrent start) is just as good.
                        match self.cancel(live).await {
                            Ok(()) | Err(EngineError::Conflict(_) | EngineError::NotFound(_)) => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
                StartOutcome::Rejected(held) if new.limits.replace && tries < TERMINATE_TRIES => {
                    tries += 1;
                    // The key's oldest when the key is full, else the workflow's.
                    let key = new.row.concurrency_key.as_deref().filter(|_| held == crate::store::Held::Key);
                    if let Some(oldest) = self.instances.oldest_active(new.row.workflow_id, key).await? {
                        match self.cancel(oldest).await {
                            Ok(()) | Err(EngineError::Conflict(_) | EngineError::NotFound(_)) => {}
                            Err(e) => return Err(e),
                        }
                        self.bus.metrics.flow(new.row.workflow_id, "on_limit", "replaced", 1);
                    }
                }
                outcome => return Ok(outcome),
            }
        }
    }

    /// Publishes and runs what an inserted instance wrote, and answers the start.
    async fn started(self: &Arc<Self>, prepared: PreparedStart, outcome: StartOutcome) -> Result<Started, EngineError> {
        let PreparedStart { new, request_hash, plan, limits, reservation, key_names_instance } = prepared;
        let (id, workflow, version) = (new.row.id, new.row.workflow_id, new.row.version);
        let status = match outcome {
            StartOutcome::Running { at } => {
                // The history starts with creation, then admission (see `start_instance`).
                let after = new.created_events.len() as i64;
                self.bus.committed(id, workflow, 1, &new.created_events);
                // As the store wrote it: decided again if admitted later than prepared.
                let on_admit = Writes { first_seq: Some(after + 1), ..new.on_admit_at(at) };
                self.committer.react_and_admit(&plan, id, &on_admit, reservation).await;
                InstanceStatus::Running
            }
            StartOutcome::Queued => {
                self.bus.metrics.flow(workflow, "limits", "queued", 1);
                if limits.throttle.is_some() {
                    self.committer.admit_soon(workflow);
                }
                self.bus.committed(id, workflow, 1, &[new.created_events, new.queued_events].concat());
                InstanceStatus::Queued
            }
            StartOutcome::Rejected(held) => {
                let limit = if held == crate::store::Held::Key { "max_per_key" } else { "max_concurrent_instances" };
                self.bus.metrics.flow(workflow, limit, "refused", 1);
                let key = new.row.concurrency_key.as_deref();
                return Err(EngineError::LimitReached(super::start_keys::limit_reached(&limits, held, key)));
            }
            StartOutcome::RateLimited { retry_at } => {
                self.bus.metrics.flow(workflow, "rate_limit", "refused", 1);
                let key = new.rate.as_ref().map(|r| r.key.as_str()).filter(|k| !k.is_empty());
                return Err(EngineError::RateLimited {
                    detail: super::start_keys::rate_limited(&limits, key),
                    retry_at,
                });
            }
            StartOutcome::Repeated(first) if first.request_hash == request_hash || key_names_instance => {
                return Ok(Started {
                    id: first.instance_id,
                    status: first.status,
                    version: first.version,
                    debounced: false,
                    repeated: true,
                });
            }
            StartOutcome::Repeated(_) => {
                return Err(EngineError::Invalid(
                    "this Idempotency-Key was already used with a different request".into(),
                ));
            }
            refused @ (StartOutcome::KeyLive(_) | StartOutcome::KeyUsed { .. }) => {
                let key = new.row.business_key.as_deref().unwrap_or_default();
                return Err(key_refused(&refused, key, limits.key_reuse));
            }
        };
        Ok(Started { id, status, version, debounced: false, repeated: false })
    }
}

/// What preparing a start made of it.
enum Prepared {
    Start(Box<PreparedStart>),
    /// Folded into a `debounce` burst: answered, nothing more to write.
    Debounced(Started),
}

/// A start ready for the store: the instance, and what answering and reacting need.
struct PreparedStart {
    new: NewInstance,
    request_hash: String,
    plan: Arc<Plan>,
    /// The latest version's plan, whose limits apply.
    limits: Arc<Plan>,
    reservation: Reservation,
    /// See `StartRequest::key_names_instance`.
    key_names_instance: bool,
}

/// The row of a new instance, queued until admitted.
fn instance_row(
    request: StartRequest,
    version: i64,
    keys: super::start_keys::StartKeys,
    now: DateTime<Utc>,
) -> InstanceRow {
    let StartRequest {
        workflow, input, key, trace_parent, parent, handles_failure_of, lineage, burst, started_by, ..
    } = request;
    InstanceRow {
        id: burst.unwrap_or_else(Uuid::now_v7),
        workflow_id: workflow,
        version,
        status: InstanceStatus::Queued,
        input: Json(input),
        output: None,
        error: None,
        business_key: key,
        created_at: now,
        started_at: None,
        ended_at: None,
        trace_id: trace_parent.as_ref().map(|p| p.trace_id.clone()),
        parent_span_id: trace_parent.map(|p| p.span_id),
        run: 1,
        parent_instance_id: parent.as_ref().map(|p| p.instance),
        parent_node_id: parent.as_ref().map(|p| p.node.clone()),
        parent_attempt: parent.as_ref().map(|p| p.attempt),
        depth: lineage.depth,
        concurrency_key: keys.concurrency,
        throttle_key: keys.throttle,
        priority: keys.priority.map(|n| n as i32),
        queue_order: trellis_model::flow::queue_order(
            now.timestamp_millis(),
            keys.priority.unwrap_or(trellis_model::flow::DEFAULT_PRIORITY),
        ),
        handles_failure_of,
        failure_depth: lineage.failure_depth,
        started_by,
        rev: 0,
    }
}

/// How deep a start's input may nest: what anyone hands Trellis, and for a failure handler's
/// run also the levels each handler in its chain wrapped around the failed instance's input.
fn input_depth_limit(request: &StartRequest) -> usize {
    // Counted along the whole lineage (a child of a handler's run may pass its input on).
    let handlers = request.lineage.failure_depth.max(0) as usize;
    MAX_JSON_DEPTH + HANDLER_INPUT_WRAP * handlers
}

/// Identifies a start request for Idempotency-Key checks: the resolved version, the input and
/// the business key, hashed from their canonical JSON.
fn request_hash(version: i64, input: &Value, key: Option<&str>) -> String {
    let canonical = serde_json::json!({"version": version, "input": input, "key": key}).to_string();
    crate::digest::sha256_hex(canonical.as_bytes())
}

fn key_refused(outcome: &StartOutcome, key: &str, policy: trellis_model::KeyReuse) -> EngineError {
    let policy = policy.as_str();
    EngineError::Conflict(match outcome {
        StartOutcome::KeyLive(Some(id)) => format!(
            "instance {id} with key `{key}` has not finished; wait for it, cancel it, or set the workflow's key_reuse to terminate_if_running"
        ),
        StartOutcome::KeyUsed { id, status } => format!(
            "the workflow's key_reuse policy is {policy} and instance {id} already used key `{key}` ({status}); start with a new key"
        ),
        _ => format!("another instance with key `{key}` was live a moment ago; try again"),
    })
}
