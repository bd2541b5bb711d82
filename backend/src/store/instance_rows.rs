//! The rows of the engine's tables as they are read and written: instances, their nodes, their
//! children and first starts, their history entries (the work queue's are `work/items.rs`,
//! what one transition writes is `writes.rs`). Their JSON columns are read leniently
//! (`lenient.rs`): one unreadable row never fails a read.

use super::lenient::{Lenient, LenientOpt};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use trellis_model::trace::EventKind;
use trellis_model::{InstanceStatus, NodeStatus, WaitKind};
use uuid::Uuid;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InstanceRow {
    pub id: Uuid,
    pub workflow_id: Uuid,
    pub version: i64,
    pub status: InstanceStatus,
    #[sqlx(try_from = "Lenient")]
    pub input: Json<Value>,
    #[sqlx(try_from = "LenientOpt")]
    pub output: Option<Json<Value>>,
    pub error: Option<String>,
    pub business_key: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// W3C trace id (32 hex digits); `None` means the instance id's hex.
    pub trace_id: Option<String>,
    /// The caller's span the instance span hangs under (from `traceparent`).
    pub parent_span_id: Option<String>,
    /// 1, then one more per retry (`POST /instances/{id}/retry`).
    pub run: i32,
    /// Of a child instance (started by a `subworkflow` node): the parent, the node and the
    /// node's attempt that started it.
    pub parent_instance_id: Option<Uuid>,
    pub parent_node_id: Option<String>,
    pub parent_attempt: Option<i32>,
    /// 0 for an instance nobody started as a child; a child's is its parent's + 1.
    pub depth: i32,
    /// The value of the workflow's `concurrency_key` when it started, as JSON text.
    pub concurrency_key: Option<String>,
    /// The value of the workflow's `throttle.key` when it started, as JSON text ('' without a
    /// key; `None` when the workflow had no throttle).
    pub throttle_key: Option<String>,
    /// The `priority` level it started with (`None`: the workflow sets none).
    pub priority: Option<i32>,
    /// The order admission takes it in while queued (`trellis_model::flow::queue_order`).
    pub queue_order: i64,
    /// Of a failure handler's run: the failed instance it handles.
    pub handles_failure_of: Option<Uuid>,
    /// 0 unless a failure handler: the failed instance's + 1 (bounds handler chains).
    pub failure_depth: i32,
    /// Who started it: a username, `key:<name>` for an API key; `None` for a trigger, a
    /// schedule, a parent or a failure handler.
    pub started_by: Option<String>,
    /// One more at every write of the instance's row, nodes or history (`store/snapshots.rs`).
    pub rev: i64,
}

impl InstanceRow {
    /// A new instance of a new workflow in `status`, for unit tests to change what they need.
    #[cfg(test)]
    pub fn for_test(status: InstanceStatus) -> InstanceRow {
        let now = Utc::now();
        let running = status != InstanceStatus::Queued;
        InstanceRow {
            id: Uuid::now_v7(),
            workflow_id: Uuid::now_v7(),
            version: 1,
            status,
            input: Json(Value::Null),
            output: None,
            error: None,
            business_key: None,
            created_at: now,
            started_at: running.then_some(now),
            ended_at: None,
            trace_id: None,
            parent_span_id: None,
            run: 1,
            parent_instance_id: None,
            parent_node_id: None,
            parent_attempt: None,
            depth: 0,
            concurrency_key: None,
            throttle_key: None,
            priority: None,
            queue_order: 0,
            handles_failure_of: None,
            failure_depth: 0,
            started_by: None,
            rev: 0,
        }
    }

    /// The W3C trace id of the instance's spans: the caller's (from `traceparent` on the
    /// start), else one derived from the instance id.
    pub fn trace_id(&self) -> String {
        self.trace_id.clone().unwrap_or_else(|| self.id.simple().to_string())
    }
}

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct NodeRow {
    pub node_id: String,
    /// The node's index in the execution plan.
    pub position: i32,
    pub status: NodeStatus,
    pub attempts: i32,
    pub outcome: Option<String>,
    #[sqlx(try_from = "LenientOpt")]
    pub output: Option<Value>,
    pub error: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// When the current attempt was dispatched: its span's start.
    pub dispatched_at: Option<DateTime<Utc>>,
    /// What the node waits on and since when: an open span.
    pub wait_kind: Option<WaitKind>,
    pub wait_started_at: Option<DateTime<Utc>>,
}

impl NodeRow {
    /// The JSON bytes of its stored output (what the instance cap counts).
    pub fn output_bytes(&self) -> usize {
        self.output.as_ref().map_or(0, trellis_model::json_len::serialized_len)
    }

    /// A node of a new instance: pending, never attempted.
    pub fn fresh(node_id: String, position: i32, status: NodeStatus) -> NodeRow {
        NodeRow {
            node_id,
            position,
            status,
            attempts: 0,
            outcome: None,
            output: None,
            error: None,
            started_at: None,
            ended_at: None,
            dispatched_at: None,
            wait_kind: None,
            wait_started_at: None,
        }
    }
}

/// One entry for an instance's history, before the store numbers it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub kind: EventKind,
    pub at: DateTime<Utc>,
    pub data: Value,
}

/// A numbered entry of an instance's history.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredEvent {
    pub seq: i64,
    pub kind: EventKind,
    pub at: DateTime<Utc>,
    #[sqlx(try_from = "Lenient")]
    pub data: Json<Value>,
}

/// A child instance as its parent's page shows it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ChildRow {
    pub id: Uuid,
    pub parent_node_id: Option<String>,
    pub parent_attempt: Option<i32>,
    pub status: InstanceStatus,
}

/// The first start made with an Idempotency-Key.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct StoredStart {
    pub request_hash: String,
    pub instance_id: Uuid,
    pub status: InstanceStatus,
    pub version: i64,
}
