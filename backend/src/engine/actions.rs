//! Operator actions on one instance: pause, resume and retry. Each is a machine event committed
//! like any other, so the instance row lock in `transition` orders it against completions,
//! and a refusal names the status that made the action not apply.

use super::commands::Commands;
use super::effects::{decide, state_of, Detail};
use super::error::EngineError;
use super::machine::{retry_set, Event, RetryFrom};
use super::plan::Plan;
use super::reserve::PRELEASE_UNDECIDED;
use crate::store::{NodeRow, Snapshot, StoreError, TransitionOutcome};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use trellis_model::{InstanceStatus, NodeStatus};
use uuid::Uuid;

impl Commands {
    /// Stops dispatching new nodes; running attempts finish and timers keep firing. A paused
    /// instance keeps its `max_concurrent_instances` slot (it is still active).
    pub async fn pause(self: &Arc<Self>, id: Uuid) -> Result<(), EngineError> {
        self.operator_event(id, Event::Pause, |status| match status {
            InstanceStatus::Paused => "the instance is already paused".to_owned(),
            InstanceStatus::Queued => {
                "the instance is queued and has not started; cancel it instead, or pause it once it runs".to_owned()
            }
            s => format!("the instance has finished ({}); only a running instance can be paused", s.as_str()),
        })
        .await
    }

    /// Dispatches what became ready while the instance was paused.
    pub async fn resume(self: &Arc<Self>, id: Uuid) -> Result<(), EngineError> {
        self.operator_event(id, Event::Resume, |status| match status {
            InstanceStatus::Running => "the instance is running, not paused; there is nothing to resume".to_owned(),
            InstanceStatus::Queued => "the instance is queued, not paused; it starts when a slot frees".to_owned(),
            s => format!("the instance has finished ({}); only a paused instance can be resumed", s.as_str()),
        })
        .await
    }
}

impl Commands {
    /// Runs a finished instance again, as the same instance (a "reset"): `from` is
    /// `failed`, `start` or a node id. Succeeded nodes outside the re-run keep their
    /// outputs; attempt numbers continue. Takes a concurrency slot like a start (it queues,
    /// or is refused, when there is none). Returns the status it is in now.
    /// With `latest_version`, the instance moves to the latest published version first:
    /// nodes are matched by id (kept results stay, new nodes run, removed ones are dropped).
    pub async fn retry(
        self: &Arc<Self>,
        id: Uuid,
        from: &str,
        latest_version: bool,
    ) -> Result<InstanceStatus, EngineError> {
        let mut snapshot = self.snapshot(id).await?;
        let status = snapshot.instance.status;
        if !status.is_terminal() {
            return Err(EngineError::Conflict(format!(
                "the instance is {}; only a finished instance can be retried: wait for it to finish, or cancel it first",
                status.as_str()
            )));
        }
        let (workflow, version) = (snapshot.instance.workflow_id, snapshot.instance.version);
        let latest = self.catalog.get_workflow(workflow).await?.and_then(|w| w.latest_version).unwrap_or(version);
        let migrate = match latest_version && latest != version {
            true => Some(self.migrate(&mut snapshot, latest).await?),
            false => None,
        };
        let version = snapshot.instance.version;
        let plan = self.plans.get(workflow, version).await?;
        let from = retry_from(&plan, version, from)?;
        if retry_set(&plan, &state_of(&plan, &snapshot), &from).is_empty() {
            return Err(EngineError::Conflict(format!(
                "nothing failed, timed out or was canceled in this {} instance; retry from \"start\" or from a node id",
                status.as_str()
            )));
        }
        let limits = self.plans.get(workflow, latest).await?;
        let key = snapshot.instance.concurrency_key.as_deref();
        self.write_retry(id, (&plan, &limits), &from, migrate, key).await
    }

    /// Moves `snapshot` onto version `latest`: nodes are matched by id (kept results stay,
    /// new nodes are pending, removed ones are dropped). Returns the version and its rows.
    async fn migrate(&self, snapshot: &mut Snapshot, latest: i64) -> Result<(i64, Vec<NodeRow>), EngineError> {
        let target = self.plans.get(snapshot.instance.workflow_id, latest).await?;
        let rows: Vec<NodeRow> = target
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let old = snapshot.nodes.iter().find(|r| r.node_id == n.id);
                old.map(|r| NodeRow { position: i as i32, ..(**r).clone() })
                    .unwrap_or_else(|| NodeRow::fresh(n.id.clone(), i as i32, NodeStatus::Pending))
            })
            .collect();
        snapshot.nodes = rows.iter().cloned().map(Arc::new).collect();
        snapshot.instance.version = latest;
        Ok((latest, rows))
    }

    /// Writes the retry in one transaction (admitted under the latest version's `limits`, or
    /// queued), then reacts to it like any transition (step 5 of `commit/`, `react.rs`).
    async fn write_retry(
        self: &Arc<Self>,
        id: Uuid,
        (plan, limits): (&Arc<Plan>, &Plan),
        from: &RetryFrom,
        migrate: Option<(i64, Vec<NodeRow>)>,
        concurrency_key: Option<&str>,
    ) -> Result<InstanceStatus, EngineError> {
        // Decided inside the store: how many attempts it dispatches is not known yet.
        let reservation = self.workers.reserve(PRELEASE_UNDECIDED);
        // `at`: read by the store under the workflow's lock, as an admission's (a retry takes a slot).
        let decide_fn = |s: &Snapshot, admit: bool, at: DateTime<Utc>| {
            // Decided again on the locked row: it may have changed since it was read.
            let reset = retry_set(plan, &state_of(plan, s), from);
            let mut writes = decide(plan, s, Event::Retry { reset, admit }, &Detail::default(), at, 0.0);
            writes.forget_map_items = *from == RetryFrom::Start && !writes.is_empty();
            reservation.lease_runs(&mut writes, &self.workers.owner);
            writes
        };
        let migrate = migrate.as_ref().map(|(v, rows)| (*v, rows.as_slice()));
        let outcome = self.instances.retry_instance(id, limits.admission(), migrate, &decide_fn).await;
        match outcome {
            Ok(Ok(TransitionOutcome::Applied(writes))) => {
                let now = writes.instance.as_ref().map_or(InstanceStatus::Running, |u| u.status);
                self.committer.react_and_admit(plan, id, &writes, reservation).await;
                Ok(now)
            }
            Ok(Err(held)) => Err(EngineError::LimitReached(format!(
                "{}; retry later",
                super::start_keys::limit_reached(limits, held, concurrency_key)
            ))),
            Ok(Ok(_)) => Err(EngineError::Conflict("the instance changed while it was being retried; look at it and try again".into())),
            Err(StoreError::Conflict(_)) => Err(EngineError::Conflict(
                "another instance with this instance's business key is live; wait for it to finish or cancel it, then retry".into(),
            )),
            Err(e) => Err(e.into()),
        }
    }
}

/// Where a retry starts: `failed`, `start` or a node id of `version`.
fn retry_from(plan: &Plan, version: i64, from: &str) -> Result<RetryFrom, EngineError> {
    Ok(match from {
        "failed" => RetryFrom::Failed,
        "start" => RetryFrom::Start,
        node => RetryFrom::Node(plan.index_of(node).ok_or_else(|| {
            EngineError::Invalid(format!(
                "version {version} of the workflow has no node `{node}`; `from` is \"failed\", \"start\" or a node id"
            ))
        })?),
    })
}
