//! Retention policies (admin): the default, and per workflow, and what one would delete if
//! saved (a preview). The sweeper in `jobs/retention.rs` applies them.

use crate::http::middleware::authed::{AsAdmin, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use crate::jobs::retention::validate;
use crate::store::RetentionPolicy;
use axum::extract::State;
use axum::Json;
use std::collections::HashMap;
use trellis_model::api::{Problem, Retention, RetentionPreview, StatusCounts, WorkflowCount};
use trellis_model::{InstanceStatus, Issue};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(show_default, put_default))
        .routes(routes!(show_workflow, put_workflow))
        .routes(routes!(preview_default))
        .routes(routes!(preview_workflow))
}

#[utoipa::path(
    post,
    path = "/retention/preview",
    operation_id = "previewRetention",
    tag = "retention",
    request_body = RetentionPolicy,
    responses(
        (status = 200, description = "What the default policy would delete now if saved; nothing is deleted", body = RetentionPreview),
        (status = 422, description = "Invalid policy", body = Problem),
    )
)]
async fn preview_default(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiJson(policy): ApiJson<RetentionPolicy>,
) -> ApiResult<Json<RetentionPreview>> {
    check(&policy)?;
    Ok(Json(preview(&state, None, &policy).await?))
}

#[utoipa::path(
    post,
    path = "/workflows/{id}/retention/preview",
    operation_id = "previewWorkflowRetention",
    tag = "retention",
    request_body = RetentionPolicy,
    responses(
        (status = 200, description = "What the workflow's policy would delete now if saved; nothing is deleted", body = RetentionPreview),
        (status = 422, description = "Invalid policy", body = Problem),
    )
)]
async fn preview_workflow(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(policy): ApiJson<RetentionPolicy>,
) -> ApiResult<Json<RetentionPreview>> {
    check(&policy)?;
    workflow_exists(&state, id).await?;
    Ok(Json(preview(&state, Some(id), &policy).await?))
}

/// Counts, per status the policy expires, what the sweep would delete in the scope now.
async fn preview(state: &AppState, workflow: Option<Uuid>, policy: &RetentionPolicy) -> ApiResult<RetentionPreview> {
    let now = chrono::Utc::now();
    let (mut instances, mut history_entries) = (0, 0);
    let mut by_status = Vec::new();
    let mut by_workflow: HashMap<Uuid, i64> = HashMap::new();
    for (status, days) in policy.ages() {
        let before = now - chrono::Duration::days(i64::from(days));
        let counts = state.store.expired_counts(workflow, status, before).await?;
        let in_status: i64 = counts.iter().map(|(_, n, _)| n).sum();
        if let Some(s) = InstanceStatus::parse(status) {
            by_status.push((s, in_status));
        }
        instances += in_status;
        history_entries += counts.iter().map(|(_, _, e)| e).sum::<i64>();
        for (w, n, _) in counts {
            *by_workflow.entry(w).or_default() += n;
        }
    }
    let mut workflows: Vec<(Uuid, i64)> = by_workflow.into_iter().collect();
    workflows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let ids: Vec<Uuid> = workflows.iter().map(|(w, _)| *w).collect();
    let names: HashMap<Uuid, String> = state.store.workflow_names(&ids).await?.into_iter().collect();
    Ok(RetentionPreview {
        scope: workflow.map_or_else(|| "default".to_owned(), |w| w.to_string()),
        instances,
        history_entries,
        by_status: StatusCounts::of(by_status),
        by_workflow: workflows
            .into_iter()
            .map(|(w, count)| WorkflowCount {
                workflow_name: names.get(&w).cloned(),
                workflow_id: w.to_string(),
                count,
            })
            .collect(),
    })
}

#[utoipa::path(
    get,
    path = "/retention",
    operation_id = "showRetention",
    tag = "retention",
    responses((status = 200, description = "The default retention policy", body = Retention))
)]
async fn show_default(State(state): State<AppState>, _: Authed<AsAdmin>) -> ApiResult<Json<Retention>> {
    // No policy yet: everything is kept forever.
    let policy = state.store.retention(None).await?.unwrap_or_default();
    Ok(Json(view(None, &policy, true)))
}

#[utoipa::path(
    put,
    path = "/retention",
    operation_id = "updateRetention",
    tag = "retention",
    request_body = RetentionPolicy,
    responses(
        (status = 200, description = "Saved", body = Retention),
        (status = 422, description = "Invalid policy", body = Problem),
    )
)]
async fn put_default(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiJson(policy): ApiJson<RetentionPolicy>,
) -> ApiResult<Json<Retention>> {
    check(&policy)?;
    state.store.put_retention(None, &policy).await?;
    Ok(Json(view(None, &policy, true)))
}

#[utoipa::path(
    get,
    path = "/workflows/{id}/retention",
    operation_id = "showWorkflowRetention",
    tag = "retention",
    responses((status = 200, description = "The workflow's policy, or the default it follows", body = Retention))
)]
async fn show_workflow(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<Retention>> {
    workflow_exists(&state, id).await?;
    // A workflow without a policy of its own follows the default.
    let (policy, own) = match state.store.retention(Some(id)).await? {
        Some(p) => (p, true),
        None => (state.store.retention(None).await?.unwrap_or_default(), false),
    };
    Ok(Json(view(Some(id), &policy, own)))
}

#[utoipa::path(
    put,
    path = "/workflows/{id}/retention",
    operation_id = "updateWorkflowRetention",
    tag = "retention",
    request_body = RetentionPolicy,
    responses(
        (status = 200, description = "Saved", body = Retention),
        (status = 422, description = "Invalid policy", body = Problem),
    )
)]
async fn put_workflow(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(policy): ApiJson<RetentionPolicy>,
) -> ApiResult<Json<Retention>> {
    check(&policy)?;
    if policy.audit_days.is_some() {
        let issue = Issue::new(
            "default_only",
            "the audit log is not per workflow: set `audit_days` on the default policy (PUT /api/v1/retention)",
        )
        .path("audit_days");
        return Err(ApiError::invalid("the retention policy is invalid; see `errors`", vec![issue]));
    }
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
/// `audit_days` belongs to the default alone.
fn view(workflow: Option<Uuid>, p: &RetentionPolicy, own: bool) -> Retention {
    Retention {
        scope: workflow.map_or_else(|| "default".to_owned(), |w| w.to_string()),
        inherited: !own,
        succeeded_days: p.succeeded_days,
        failed_days: p.failed_days,
        canceled_days: p.canceled_days,
        timed_out_days: p.timed_out_days,
        audit_days: workflow.is_none().then_some(p.audit_days),
    }
}
