//! Retention policies (admin): the default, and per workflow. The sweeper in
//! `jobs/retention.rs` applies them.

use super::auth::{AsAdmin, Authed};
use super::error::{ApiError, ApiResult};
use super::extract::{ApiJson, ApiPath};
use super::AppState;
use crate::jobs::retention::validate;
use crate::store::RetentionPolicy;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use uuid::Uuid;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/retention", get(show_default).put(put_default))
        .route("/workflows/{id}/retention", get(show_workflow).put(put_workflow))
}

async fn show_default(State(state): State<AppState>, _: Authed<AsAdmin>) -> ApiResult<Json<Value>> {
    // No policy yet: everything is kept forever.
    let policy = state.store.retention(None).await?.unwrap_or_default();
    Ok(Json(view(None, &policy, true)))
}

async fn put_default(State(state): State<AppState>, _: Authed<AsAdmin>, ApiJson(policy): ApiJson<RetentionPolicy>) -> ApiResult<Json<Value>> {
    check(&policy)?;
    state.store.put_retention(None, &policy).await?;
    Ok(Json(view(None, &policy, true)))
}

async fn show_workflow(State(state): State<AppState>, _: Authed<AsAdmin>, ApiPath(id): ApiPath<Uuid>) -> ApiResult<Json<Value>> {
    workflow_exists(&state, id).await?;
    // A workflow without a policy of its own follows the default.
    let (policy, own) = match state.store.retention(Some(id)).await? {
        Some(p) => (p, true),
        None => (state.store.retention(None).await?.unwrap_or_default(), false),
    };
    Ok(Json(view(Some(id), &policy, own)))
}

async fn put_workflow(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(policy): ApiJson<RetentionPolicy>,
) -> ApiResult<Json<Value>> {
    check(&policy)?;
    workflow_exists(&state, id).await?;
    state.store.put_retention(Some(id), &policy).await?;
    Ok(Json(view(Some(id), &policy, true)))
}

fn check(policy: &RetentionPolicy) -> ApiResult<()> {
    let errors = validate(policy);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("the retention policy is invalid; see `errors`", errors))
    }
}

async fn workflow_exists(state: &AppState, id: Uuid) -> ApiResult<()> {
    match state.store.get_workflow(id).await? {
        Some(_) => Ok(()),
        None => Err(ApiError::NotFound(format!("no workflow with id {id}"))),
    }
}

/// The policy with where it comes from: `own` is false when a workflow inherits the default.
fn view(workflow: Option<Uuid>, p: &RetentionPolicy, own: bool) -> Value {
    json!({
        "scope": workflow.map_or_else(|| "default".to_owned(), |w| w.to_string()),
        "inherited": !own,
        "succeeded_days": p.succeeded_days, "failed_days": p.failed_days,
        "canceled_days": p.canceled_days, "timed_out_days": p.timed_out_days,
    })
}
