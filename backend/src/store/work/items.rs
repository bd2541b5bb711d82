//! The engine's work queue, typed: what each row of the `work` table asks for and what it
//! carries. The table keeps its columns (`kind`, `node_id`, `attempt`, `queue`, `payload`);
//! [`Work`] is written to them and read back from them here, and only here. A row that does not
//! read back (a kind a newer Trellis wrote, a payload missing a field) is an [`UnreadableWork`]
//! naming the row and what is wrong, never a default: the item is left to its lease.

use crate::store::lenient::LenientOpt;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use trellis_model::InstanceStatus;
use uuid::Uuid;

/// The attempt of a node a work item is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAttempt {
    pub node: String,
    pub attempt: i32,
}

impl NodeAttempt {
    pub fn new(node: &str, attempt: u32) -> NodeAttempt {
        NodeAttempt { node: node.to_owned(), attempt: attempt as i32 }
    }

    /// The attempt's number as the engine counts it (from 1).
    pub fn number(&self) -> u32 {
        self.attempt.max(0) as u32
    }
}

/// What a work item asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// Run a node's attempt.
    Run(NodeAttempt),
    /// End a delay node's wait.
    Resume(NodeAttempt),
    /// Start the next attempt once a retry backoff is over.
    Retry(NodeAttempt),
    /// The attempt ran past its node's `timeout_ms`.
    NodeTimeout(NodeAttempt),
    /// The instance ran past its workflow's `timeout_ms`.
    InstanceTimeout,
    /// An attempt of a `task` node, for an external worker polling `queue`.
    Task { attempt: NodeAttempt, queue: String, input: Value },
    /// A child instance ended: completes the `subworkflow` attempt (or nudges the `map` item)
    /// that started it. Written on the parent by the transaction that ends the child.
    ChildDone { attempt: NodeAttempt, end: ChildEnd },
    /// Cancel the instance's live children that no longer serve a running attempt (written
    /// when the instance ends, or a `subworkflow` attempt times out or is lost).
    CancelChildren,
    /// Start the workflow's `on_failure` handler for the run that just ended badly (written
    /// by the transaction that ends the instance, so it happens once whatever crashes).
    OnFailure(RunEnd),
    /// Record the alerts of the run that just ended badly (see `crate::alerts`).
    Alert(RunEnd),
}

/// How a child instance ended, as its parent's `ChildDone` item keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildEnd {
    pub child: Uuid,
    pub status: InstanceStatus,
    pub output: Option<Value>,
    pub error: Option<String>,
}

/// How a run ended badly, kept by the item that handles it: a retry may change the instance's
/// row before the item runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnd {
    pub run: i32,
    pub status: InstanceStatus,
    pub error: Option<String>,
    pub failed_node: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<String>,
}

/// The `kind` column: which [`Work`] a row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkKind {
    Run,
    Resume,
    Retry,
    NodeTimeout,
    InstanceTimeout,
    Task,
    ChildDone,
    CancelChildren,
    OnFailure,
    Alert,
}

impl WorkKind {
    pub const ALL: [WorkKind; 10] = [
        WorkKind::Run,
        WorkKind::Resume,
        WorkKind::Retry,
        WorkKind::NodeTimeout,
        WorkKind::InstanceTimeout,
        WorkKind::Task,
        WorkKind::ChildDone,
        WorkKind::CancelChildren,
        WorkKind::OnFailure,
        WorkKind::Alert,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WorkKind::Run => "run",
            WorkKind::Resume => "resume",
            WorkKind::Retry => "retry",
            WorkKind::NodeTimeout => "node_timeout",
            WorkKind::InstanceTimeout => "instance_timeout",
            WorkKind::Task => "task",
            WorkKind::ChildDone => "child_done",
            WorkKind::CancelChildren => "cancel_children",
            WorkKind::OnFailure => "on_failure",
            WorkKind::Alert => "alert",
        }
    }

    pub fn parse(name: &str) -> Option<WorkKind> {
        WorkKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for WorkKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

trellis_model::sqlx_text!(WorkKind, "work kind");

/// The columns a [`Work`] is stored in.
pub struct WorkColumns<'a> {
    pub kind: WorkKind,
    pub node_id: Option<&'a str>,
    pub attempt: Option<i32>,
    pub queue: Option<&'a str>,
    pub payload: Option<Value>,
}

impl Work {
    pub fn kind(&self) -> WorkKind {
        match self {
            Work::Run(_) => WorkKind::Run,
            Work::Resume(_) => WorkKind::Resume,
            Work::Retry(_) => WorkKind::Retry,
            Work::NodeTimeout(_) => WorkKind::NodeTimeout,
            Work::InstanceTimeout => WorkKind::InstanceTimeout,
            Work::Task { .. } => WorkKind::Task,
            Work::ChildDone { .. } => WorkKind::ChildDone,
            Work::CancelChildren => WorkKind::CancelChildren,
            Work::OnFailure(_) => WorkKind::OnFailure,
            Work::Alert(_) => WorkKind::Alert,
        }
    }

    /// The node attempt the item is about, for the kinds that are about one.
    pub fn attempt(&self) -> Option<&NodeAttempt> {
        match self {
            Work::Run(at) | Work::Resume(at) | Work::Retry(at) | Work::NodeTimeout(at) => Some(at),
            Work::Task { attempt, .. } | Work::ChildDone { attempt, .. } => Some(attempt),
            Work::InstanceTimeout | Work::CancelChildren | Work::OnFailure(_) | Work::Alert(_) => None,
        }
    }

    /// Whether this runs `node`'s `attempt`.
    pub fn runs(&self, node: &str, attempt: i32) -> bool {
        matches!(self, Work::Run(at) if at.node == node && at.attempt == attempt)
    }

    pub fn columns(&self) -> WorkColumns<'_> {
        let at = self.attempt();
        let payload = match self {
            Work::Task { input, .. } => Some(input.clone()),
            Work::ChildDone { end, .. } => Some(to_json(end)),
            Work::OnFailure(end) | Work::Alert(end) => Some(to_json(end)),
            _ => None,
        };
        WorkColumns {
            kind: self.kind(),
            node_id: at.map(|a| a.node.as_str()),
            attempt: at.map(|a| a.attempt),
            queue: match self {
                Work::Task { queue, .. } => Some(queue),
                _ => None,
            },
            payload,
        }
    }

    /// Reads the work a row's columns hold, or says what is wrong with them.
    pub fn read(
        kind: &str,
        node_id: Option<String>,
        attempt: Option<i32>,
        queue: Option<String>,
        payload: Option<Value>,
    ) -> Result<Work, String> {
        let kind =
            WorkKind::parse(kind).ok_or_else(|| format!("unknown kind `{kind}` (written by a newer Trellis?)"))?;
        let at = || match (node_id.clone(), attempt) {
            (Some(node), Some(attempt)) => Ok(NodeAttempt { node, attempt }),
            _ => Err(format!("a `{kind}` item names no node attempt")),
        };
        let carried = |what: &str| payload.clone().ok_or_else(|| format!("a `{kind}` item carries no {what}"));
        Ok(match kind {
            WorkKind::Run => Work::Run(at()?),
            WorkKind::Resume => Work::Resume(at()?),
            WorkKind::Retry => Work::Retry(at()?),
            WorkKind::NodeTimeout => Work::NodeTimeout(at()?),
            WorkKind::InstanceTimeout => Work::InstanceTimeout,
            WorkKind::CancelChildren => Work::CancelChildren,
            WorkKind::Task => Work::Task {
                attempt: at()?,
                queue: queue.ok_or_else(|| "a `task` item names no queue".to_owned())?,
                // A task's input may be JSON `null`, which a database may keep as SQL NULL.
                input: payload.unwrap_or(Value::Null),
            },
            WorkKind::ChildDone => Work::ChildDone { attempt: at()?, end: from_json(kind, carried("child's end")?)? },
            WorkKind::OnFailure => Work::OnFailure(from_json(kind, carried("run's end")?)?),
            WorkKind::Alert => Work::Alert(from_json(kind, carried("run's end")?)?),
        })
    }
}

fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("a work payload is plain data")
}

fn from_json<T: for<'de> Deserialize<'de>>(kind: WorkKind, payload: Value) -> Result<T, String> {
    serde_json::from_value(payload).map_err(|e| format!("the `{kind}` item's payload does not read: {e}"))
}

/// A work row that does not read back as [`Work`]: which row, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct UnreadableWork {
    pub kind: String,
    pub why: String,
}

impl std::fmt::Display for UnreadableWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

/// A stored work item, as claimed or read.
#[derive(Debug, Clone)]
pub struct WorkItem {
    pub id: Uuid,
    pub instance_id: Uuid,
    pub work: Result<Work, UnreadableWork>,
    pub due_at: DateTime<Utc>,
    pub lease_owner: Option<String>,
    pub lease_epoch: i64,
    pub lease_expires_at: Option<DateTime<Utc>>,
}

impl WorkItem {
    pub fn fence(&self) -> Option<Fence> {
        Some(Fence { work_id: self.id, owner: self.lease_owner.clone()?, epoch: self.lease_epoch })
    }

    /// The kind, for logs: the column's text when the row did not read.
    pub fn kind_name(&self) -> &str {
        match &self.work {
            Ok(work) => work.kind().as_str(),
            Err(unreadable) => &unreadable.kind,
        }
    }
}

/// A `work` row as stored; [`WorkItem`] is what the store hands out.
#[derive(sqlx::FromRow)]
pub(in crate::store) struct WorkRow {
    id: Uuid,
    instance_id: Uuid,
    kind: String,
    node_id: Option<String>,
    attempt: Option<i32>,
    queue: Option<String>,
    #[sqlx(try_from = "LenientOpt")]
    payload: Option<Value>,
    due_at: DateTime<Utc>,
    lease_owner: Option<String>,
    lease_epoch: i64,
    lease_expires_at: Option<DateTime<Utc>>,
}

impl From<WorkRow> for WorkItem {
    fn from(row: WorkRow) -> WorkItem {
        let work = Work::read(&row.kind, row.node_id, row.attempt, row.queue, row.payload)
            .map_err(|why| UnreadableWork { kind: row.kind, why });
        WorkItem {
            id: row.id,
            instance_id: row.instance_id,
            work,
            due_at: row.due_at,
            lease_owner: row.lease_owner,
            lease_epoch: row.lease_epoch,
            lease_expires_at: row.lease_expires_at,
        }
    }
}

/// Proof of holding a work item's lease: writes with a stale fence change nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub work_id: Uuid,
    pub owner: String,
    pub epoch: i64,
}

/// A work item to insert.
#[derive(Debug, Clone, PartialEq)]
pub struct NewWork {
    /// Set when the caller needs to know it (a pre-leased item it will run itself).
    pub id: Option<Uuid>,
    pub work: Work,
    pub due_at: DateTime<Utc>,
    /// Inserted already claimed by this owner until then (epoch 1): the process that
    /// dispatched it runs it at once, without a claim round trip.
    pub lease: Option<(String, DateTime<Utc>)>,
}

impl NewWork {
    /// `work`, due at `due_at`, for any process to claim.
    pub fn due(work: Work, due_at: DateTime<Utc>) -> NewWork {
        NewWork { id: None, work, due_at, lease: None }
    }

    /// A run item nobody has leased yet (a leased one is run by the process that wrote it).
    pub fn is_unleased_run(&self) -> bool {
        matches!(self.work, Work::Run(_)) && self.lease.is_none()
    }
}

#[cfg(test)]
mod tests;
