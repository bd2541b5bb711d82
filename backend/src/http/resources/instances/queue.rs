//! The queue inspector: why an instance waits — the limit that holds it and its place in line.

use crate::engine::plan::time_window;
use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::ApiPath;
use crate::http::AppState;
use crate::store::{InstanceRow, Snapshot};
use axum::extract::State;
use axum::Json;
use trellis_model::api::{HeldBy, QueueHold, QueuePlace, QueuedNode};
use trellis_model::flow::Window;
use trellis_model::{InstanceStatus, NodeStatus};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(queue))
}

/// Why an instance waits: the limit that holds it and its place in line.
#[utoipa::path(
    get,
    path = "/instances/{id}/queue",
    operation_id = "showInstanceQueue",
    tag = "instances",
    responses((
        status = 200,
        description = "Which limit holds the instance or its nodes, and their places",
        body = QueuePlace
    ))
)]
async fn queue(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<QueuePlace>> {
    let Some(snapshot) = state.store.get_instance(id).await? else {
        // An id a `debounce` burst gave out: it waits for the burst to end.
        let burst = state.store.pending_debounce(id).await?;
        return burst
            .map(|b| Json(gathering(&b)))
            .ok_or_else(|| ApiError::NotFound(format!("no instance with id {id}")));
    };
    let status = snapshot.instance.status;
    let place = match status {
        InstanceStatus::Queued => admission(&state, &snapshot).await?,
        InstanceStatus::Running => dispatch(&state, &snapshot).await?,
        _ => QueuePlace {
            instance_id: id.to_string(),
            status,
            held_by: None,
            position: None,
            ahead: None,
            nodes: Some(vec![]),
        },
    };
    Ok(Json(place))
}

/// A queued instance: its place among the instances with its concurrency key when that key
/// is what holds it; else among the workflow's queued instances when its slots are full;
/// else in its throttle key's line and window.
async fn admission(state: &AppState, snapshot: &Snapshot) -> ApiResult<QueuePlace> {
    let i = &snapshot.instance;
    // Admission follows the latest published version's limits, as the engine does.
    let latest = state.store.get_workflow(i.workflow_id).await?.and_then(|w| w.latest_version).unwrap_or(i.version);
    let plan = state.engine.plan(i.workflow_id, latest).await?;
    if let (Some((expression, per_key)), Some(key)) = (&plan.concurrency_key, &i.concurrency_key) {
        let place = state.store.key_queue_place(i.workflow_id, key, i.id).await?;
        // The key holds it when those running with it and those ahead of it in the key's
        // line use up the key's room; otherwise it is the workflow's limit.
        if place.ahead + place.active >= i64::from(*per_key) {
            let hold = QueueHold {
                name: None,
                node: None,
                limit: "max_per_key".into(),
                value: Some(u64::from(*per_key)),
                running: place.active,
                key: Some(expression.clone()),
                key_value: serde_json::from_str(key).ok(),
                until: None,
            };
            return Ok(queued(i.id, hold, place.ahead));
        }
    }
    let per_key = plan.concurrency_key.as_ref().map(|(_, n)| *n);
    let place = state.store.queue_place(i.workflow_id, i.id, per_key).await?;
    let slots_full = plan.instance_limit.is_some_and(|limit| place.active >= i64::from(limit));
    if let (Some(window), false) = (&plan.throttle, slots_full) {
        return throttled(state, i, window).await;
    }
    let hold = QueueHold {
        name: None,
        node: None,
        limit: "max_concurrent_instances".into(),
        value: plan.instance_limit.map(u64::from),
        running: place.active,
        key: None,
        key_value: None,
        until: None,
    };
    Ok(queued(i.id, hold, place.ahead))
}

/// A queued instance the workflow's slots have room for: its throttle window holds it.
async fn throttled(state: &AppState, i: &InstanceRow, window: &Window) -> ApiResult<QueuePlace> {
    let key = i.throttle_key.as_deref().unwrap_or_default();
    let place = state.store.throttle_place(i.workflow_id, key, i.id, time_window(window)).await?;
    let hold = QueueHold {
        name: None,
        node: None,
        limit: "throttle".into(),
        value: Some(u64::from(window.limit)),
        running: place.in_window,
        key: window.key.clone(),
        key_value: window.key.as_ref().and_then(|_| serde_json::from_str(key).ok()),
        until: place.opens_at.map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
    };
    Ok(queued(i.id, hold, place.ahead))
}

/// What holds a queued instance back, as `GET /instances/{id}` names it (`held_by`).
pub(super) async fn held_by(state: &AppState, snapshot: &Snapshot) -> ApiResult<Option<HeldBy>> {
    if snapshot.instance.status == InstanceStatus::Running {
        return Ok(state.store.limit_wait(snapshot.instance.id).await?.map(|wait| HeldBy {
            kind: "limit".into(),
            node: Some(wait.node_id),
            name: Some(wait.limit),
            key: None,
            position: Some(wait.ahead + 1),
            until: wait.until.map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        }));
    }
    if snapshot.instance.status != InstanceStatus::Queued {
        return Ok(None);
    }
    let place = admission(state, snapshot).await?;
    Ok(place.held_by.map(|hold| HeldBy {
        kind: hold.limit,
        node: None,
        name: None,
        key: hold.key_value,
        position: place.position,
        until: hold.until,
    }))
}

/// A `debounce` burst still gathering: held until it is due.
fn gathering(burst: &crate::store::DebounceRow) -> QueuePlace {
    let hold = QueueHold {
        name: None,
        node: None,
        limit: "debounce".into(),
        value: None,
        running: burst.starts,
        key: None,
        key_value: serde_json::from_str(&burst.key).ok(),
        until: Some(burst.due_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
    };
    QueuePlace {
        instance_id: burst.instance_id.to_string(),
        status: InstanceStatus::Queued,
        held_by: Some(hold),
        position: None,
        ahead: None,
        nodes: None,
    }
}

fn queued(id: Uuid, hold: QueueHold, ahead: i64) -> QueuePlace {
    QueuePlace {
        instance_id: id.to_string(),
        status: InstanceStatus::Queued,
        held_by: Some(hold),
        position: Some(ahead + 1),
        ahead: Some(ahead),
        nodes: None,
    }
}

/// A running instance: its ready nodes in the order they will get a slot.
async fn dispatch(state: &AppState, snapshot: &Snapshot) -> ApiResult<QueuePlace> {
    let i = &snapshot.instance;
    let plan = state.engine.plan(i.workflow_id, i.version).await?;
    let running = snapshot.nodes.iter().filter(|n| n.status == NodeStatus::Running).count();
    // The machine dispatches ready nodes in plan order as slots free up.
    let mut ready: Vec<_> = snapshot.nodes.iter().filter(|n| n.status == NodeStatus::Ready).collect();
    ready.sort_by_key(|n| n.position);
    let nodes: Vec<QueuedNode> =
        ready.iter().enumerate().map(|(k, n)| QueuedNode { node: n.node_id.clone(), position: k + 1 }).collect();
    let limit = (plan.max_parallel != usize::MAX).then_some(plan.max_parallel as u64);
    let hold =
        QueueHold { limit: "max_parallel_nodes".into(), value: limit, running: running as i64, ..QueueHold::default() };
    let held_by = match nodes.is_empty() {
        false => Some(hold),
        true => state.store.limit_wait(i.id).await?.map(|wait| QueueHold {
            limit: "limit".into(),
            name: Some(wait.limit),
            node: Some(wait.node_id),
            running: wait.ahead,
            until: wait.until.map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
            ..QueueHold::default()
        }),
    };
    Ok(QueuePlace {
        instance_id: i.id.to_string(),
        status: InstanceStatus::Running,
        held_by,
        position: None,
        ahead: None,
        nodes: Some(nodes),
    })
}
