//! Instances: starting one, finding and inspecting them, acting on one, its history, and why
//! it waits.

use super::StatusCounts;
use crate::trace::HistoryEvent;
use crate::{InstanceStatus, NodeStatus};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StartInstance {
    #[serde(default)]
    pub input: Option<serde_json::Value>,
    #[serde(default)]
    pub version: Option<i64>,
    /// A business id, for finding the instance again (`?key=`).
    #[serde(default)]
    pub key: Option<String>,
}

/// The answer to a start: status `queued` or `running`, on version `version`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Started {
    pub id: String,
    pub status: InstanceStatus,
    pub version: i64,
    /// Folded into a burst by the workflow's `debounce`: `id` is the burst's instance, created
    /// (with the last start's input) when the burst ends.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub debounced: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstanceSummary {
    pub id: String,
    pub workflow_id: String,
    /// The workflow's name, so a list needs no lookup per row.
    #[serde(default)]
    pub workflow_name: Option<String>,
    pub version: i64,
    pub status: InstanceStatus,
    pub key: Option<String>,
    pub error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    /// Who started it: a username, `key:<name>` for an API key; `null` for a trigger, a
    /// schedule, a parent or a failure handler.
    #[serde(default)]
    pub started_by: Option<String>,
}

/// A page of instances, newest first, with the count per status of everything the filter
/// matches (whatever its `status`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstancePage {
    pub items: Vec<InstanceSummary>,
    pub next_cursor: Option<String>,
    pub counts: StatusCounts,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeView {
    pub id: String,
    pub status: NodeStatus,
    pub attempts: i32,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    pub output: Option<serde_json::Value>,
    pub error: Option<String>,
    /// A `subworkflow` node's latest child instance (of its latest attempt that started one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<String>,
    /// That child's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_status: Option<InstanceStatus>,
    /// A `map` node's items: how many, and how far they got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<crate::trace::ItemProgress>,
    /// Running (or waiting) longer than its threshold now: `slow_after_ms`.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub slow: bool,
    /// The threshold a running node is judged by, in ms: its own `stuck_after_ms`, or k× the
    /// p95 of its recent successful durations (see `slow_basis`); absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_after_ms: Option<i64>,
    /// Where `slow_after_ms` comes from: `stuck_after_ms` or `p95`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_basis: Option<String>,
    /// An `approval` node's latest approval (`/approvals/{id}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstanceDetail {
    #[serde(flatten)]
    pub summary: InstanceSummary,
    pub input: serde_json::Value,
    pub output: Option<serde_json::Value>,
    pub nodes: Vec<NodeView>,
    /// The instance and `subworkflow` node that started this one as its child; `null` for an
    /// instance started otherwise.
    #[serde(default)]
    pub parent: Option<ParentRef>,
    /// The failure handler run this instance's (latest) failure started; `null` if none.
    #[serde(default)]
    pub failure_handler: Option<InstanceLink>,
    /// The failed instance this one was started to handle (as its workflow's `on_failure`).
    #[serde(default)]
    pub handles_failure_of: Option<InstanceLink>,
    /// The value of the workflow's `concurrency_key` the instance runs under (`max_per_key`
    /// counts instances with the same value); `null` when the workflow has no key.
    #[serde(default)]
    pub concurrency_key: Option<serde_json::Value>,
    /// What holds the instance back while it is `queued`; `null` otherwise.
    #[serde(default)]
    pub held_by: Option<HeldBy>,
}

/// What holds a queued instance back (`GET /instances/{id}`'s `held_by`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeldBy {
    /// `max_concurrent_instances`, `max_per_key`, `throttle`, `debounce`, or `limit` (a
    /// shared limit a running instance's node waits for).
    pub kind: String,
    /// The node held back (a shared limit holds nodes, the others whole instances).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// A shared limit's name; `null` for the workflow's own limits.
    #[serde(default)]
    pub name: Option<String>,
    /// The key value it waits under (`max_per_key`, a keyed `throttle`).
    #[serde(default)]
    pub key: Option<serde_json::Value>,
    /// Its place in line: 1 goes next.
    #[serde(default)]
    pub position: Option<i64>,
    /// When it expects to go (RFC 3339): a throttle's window opening; `null` when that
    /// waits on other instances ending.
    #[serde(default)]
    pub until: Option<String>,
}

/// Where a child instance came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ParentRef {
    /// The parent instance's id (it may have been purged since).
    pub instance: String,
    /// The parent's `subworkflow` node.
    pub node: String,
    /// The parent's workflow, when the parent still exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_name: Option<String>,
}

/// Another instance, with its workflow when it still exists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstanceLink {
    pub instance: String,
    pub workflow_id: Option<String>,
    pub workflow_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SignalRequest {
    pub node: String,
    #[serde(default)]
    pub payload: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RetryRequest {
    /// `failed`, `start` or a node id.
    pub from: String,
    #[serde(default)]
    pub latest_version: bool,
}

/// A page of an instance's history in `seq` order; `next_after` is the `after` of the next
/// page, `null` when this one was not full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct History {
    pub items: Vec<HistoryEvent>,
    pub next_after: Option<i64>,
}

/// Why an instance waits. A queued instance has `position` and `ahead` (its place among
/// the workflow's queued instances); a running one has `nodes`, its ready nodes in the
/// order they will start; a finished one has an empty `nodes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueuePlace {
    pub instance_id: String,
    pub status: InstanceStatus,
    /// The limit that holds it (or its ready nodes); `null` when nothing does.
    pub held_by: Option<QueueHold>,
    /// 1 for the next to be admitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ahead: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<QueuedNode>>,
}

/// A limit and how much of it is in use.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueueHold {
    /// `max_concurrent_instances`, `max_per_key`, `throttle`, `debounce`, `max_parallel_nodes`,
    /// or `limit` (a shared limit a running instance's node waits for).
    pub limit: String,
    /// Under `limit`: the shared limit's name and the node waiting for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The limit's value; `null` when there is none.
    pub value: Option<u64>,
    /// How many instances (or nodes) hold a slot now; under `max_per_key`, those with the
    /// same key; under `throttle`, the starts its key's window holds; under `debounce`, the
    /// starts folded into the burst so far.
    pub running: i64,
    /// Under `max_per_key`: the workflow's `concurrency_key` expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Under `max_per_key`: the instance's key value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_value: Option<serde_json::Value>,
    /// Under `throttle`: when its key's window next has room (RFC 3339); `null` when it has
    /// room now (it waits on instances ahead of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
}

/// A ready node and its place in the line for a slot (1 starts next).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueuedNode {
    pub node: String,
    pub position: usize,
}

/// The `data:` of the dashboard feed's `counts` event: instances by status, of one workflow
/// or of all (`workflow_id` `null`); `resync` when sent again after the client fell behind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CountsEvent {
    pub workflow_id: Option<String>,
    pub counts: StatusCounts,
    pub resync: bool,
}

/// One item of a `map` node (`GET /instances/{id}/nodes/{node}/items`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MapItem {
    pub index: u32,
    /// `pending`, `running`, `succeeded`, `failed`, `timed_out` or `canceled`.
    pub status: NodeStatus,
    pub attempts: i32,
    pub started_at: Option<DateTime<Utc>>,
    pub ended_at: Option<DateTime<Utc>>,
    pub output: Option<serde_json::Value>,
    pub error: Option<String>,
    /// The child instance of a map over a workflow (of the item's latest attempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<String>,
}

/// A page of a map node's items, in index order, with the node's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MapItemPage {
    pub items: Vec<MapItem>,
    /// Pass as `cursor` for the next page; `null` on the last.
    pub next_cursor: Option<String>,
    /// Items of the node's list (0 before the map has evaluated it).
    pub total: u64,
    /// Items by status (every status of the list, zeros included).
    pub counts: std::collections::BTreeMap<String, u64>,
}

/// One line of `GET /instances/export?format=jsonl` (a CSV row has the same fields, `input`
/// and `output` as JSON text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExportedInstance {
    #[serde(flatten)]
    pub summary: InstanceSummary,
    pub input: serde_json::Value,
    pub output: Option<serde_json::Value>,
}

/// The CSV export's columns, in order.
pub const EXPORT_CSV_COLUMNS: [&str; 12] = [
    "id",
    "workflow_id",
    "workflow_name",
    "version",
    "status",
    "key",
    "created_at",
    "started_at",
    "ended_at",
    "error",
    "input",
    "output",
];
