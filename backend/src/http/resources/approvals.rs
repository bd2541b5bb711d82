//! Approvals (`/approvals`): the inbox of what `approval` nodes ask, and deciding them
//! (the engine's side: `engine/approvals/`). Anyone signed in lists what they may decide and
//! what they decided; operators and above list everything. Who may decide one is the
//! approval's rule (its assignees, and its starter only with `allow_starter`), not a role.

use crate::audit::AuditNote;
use crate::auth::Principal;
use crate::engine::approvals::Decision;
use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiPath, ApiQuery};
use crate::http::resources::api_keys::bad_field;
use crate::http::AppState;
use crate::store::{ApprovalQuery, ApprovalRow, DecisionRow, Person};
use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use std::collections::HashMap;
use trellis_model::api::{Approval, ApprovalCount, ApprovalList, DecisionRequest, Problem};
use trellis_model::Role;
use utoipa::IntoParams;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

/// Approvals per page: the default and the most.
const PAGE: u32 = 50;
const MAX_PAGE: u32 = 500;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(count)).routes(routes!(show)).routes(routes!(decide))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// `open` or `closed` (approved, rejected, timed out, or its run moved on).
    status: Option<String>,
    /// Only open approvals the caller may decide now.
    mine: Option<bool>,
    /// Only approvals the caller decided.
    decided: Option<bool>,
    /// Only this instance's.
    instance_id: Option<Uuid>,
    /// `next_cursor` of the previous page.
    cursor: Option<Uuid>,
    /// Approvals per page, 1-500 (default 50).
    limit: Option<u32>,
}

#[utoipa::path(
    get,
    path = "/approvals",
    operation_id = "listApprovals",
    tag = "approvals",
    params(ListParams),
    responses(
        (status = 200, description = "A page of approvals, newest first", body = ApprovalList),
        (status = 403, description = "Every approval (no `mine`, `decided` or `instance_id`) needs the operator role", body = Problem),
        (status = 422, description = "A parameter that cannot be read (`errors[].path` names it)", body = Problem),
    )
)]
async fn list(
    State(state): State<AppState>,
    caller: Authed<AsViewer>,
    ApiQuery(p): ApiQuery<ListParams>,
) -> ApiResult<Json<ApprovalList>> {
    let open = match p.status.as_deref() {
        None | Some("") => None,
        Some("open") => Some(true),
        Some("closed") => Some(false),
        Some(other) => return Err(bad_field("status", format!("`status` is `open` or `closed`, not `{other}`"))),
    };
    let limit = p.limit.unwrap_or(PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(bad_field("limit", format!("`limit` must be 1 to {MAX_PAGE}")));
    }
    let principal = &caller.principal;
    let (mine, decided) = (p.mine.unwrap_or(false), p.decided.unwrap_or(false));
    if !mine && !decided && p.instance_id.is_none() && principal.role < Role::Operator {
        return Err(ApiError::Forbidden(
            "listing every approval needs the operator role; ask for `mine=true` or `decided=true`".into(),
        ));
    }
    let person = person_of(&state, principal).await?;
    let query = ApprovalQuery {
        open,
        decidable_by: mine.then(|| person.clone()),
        decided_by: decided.then(|| principal.name.clone()),
        instance: p.instance_id,
        before: p.cursor,
        limit: limit + 1,
    };
    let mut rows = state.store.list_approvals(&query).await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next_cursor = more.then(|| rows.last().map(|r| r.id.to_string())).flatten();
    let items = shown_all(&state, rows, &person).await?;
    Ok(Json(ApprovalList { items, next_cursor }))
}

#[utoipa::path(
    get,
    path = "/approvals/count",
    operation_id = "countMyApprovals",
    tag = "approvals",
    responses((status = 200, description = "How many open approvals the caller may decide", body = ApprovalCount))
)]
async fn count(State(state): State<AppState>, caller: Authed<AsViewer>) -> ApiResult<Json<ApprovalCount>> {
    let person = person_of(&state, &caller.principal).await?;
    let mine = state.store.count_decidable(&person).await?;
    Ok(Json(ApprovalCount { mine: mine.max(0) as u64 }))
}

#[utoipa::path(
    get,
    path = "/approvals/{id}",
    operation_id = "getApproval",
    tag = "approvals",
    params(("id" = Uuid, Path, description = "The approval's id")),
    responses(
        (status = 200, description = "The approval, its decisions, and whether the caller may decide it", body = Approval),
        (status = 404, description = "No such approval (or its instance was purged)", body = Problem),
    )
)]
async fn show(
    State(state): State<AppState>,
    caller: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<Approval>> {
    let person = person_of(&state, &caller.principal).await?;
    Ok(Json(one(&state, id, &person).await?))
}

#[utoipa::path(
    post,
    path = "/approvals/{id}/decision",
    operation_id = "decideApproval",
    tag = "approvals",
    params(("id" = Uuid, Path, description = "The approval's id")),
    request_body = DecisionRequest,
    responses(
        (status = 200, description = "Counted; the approval as it is now (closed if this decided it)", body = Approval),
        (status = 403, description = "Not an assignee, or the run's starter while `allow_starter` is false", body = Problem),
        (status = 404, description = "No such approval (or its instance was purged)", body = Problem),
        (status = 409, description = "Already decided by the caller, or closed", body = Problem),
        (status = 413, description = "The comment or the response is too long", body = Problem),
        (status = 422, description = "The response breaks the approval's form (`errors[].path` per violation)", body = Problem),
    )
)]
async fn decide(
    State(state): State<AppState>,
    caller: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
    ApiJson(request): ApiJson<DecisionRequest>,
) -> ApiResult<(Extension<AuditNote>, Json<Approval>)> {
    let person = person_of(&state, &caller.principal).await?;
    let verdict = request.decision;
    let decided = state.engine.decide_approval(id, &person, request).await?;
    // The audit row says which way it went (the route alone says only that someone decided).
    let what = match decided {
        Decision::Counted => format!("{}: counted; the approval stays open", verdict.as_str()),
        Decision::Closed(status) => format!("{}: closed the approval {}", verdict.as_str(), status.as_str()),
    };
    Ok((Extension(AuditNote(what)), Json(one(&state, id, &person).await?)))
}

/// The caller as an approval judges them: their name, role and (a user's) groups.
async fn person_of(state: &AppState, principal: &Principal) -> ApiResult<Person> {
    let key = principal.name.starts_with("key:");
    let groups = match key {
        true => Vec::new(),
        false => state.store.user_by_name(&principal.name).await?.map(|u| u.groups.0).unwrap_or_default(),
    };
    Ok(Person { name: principal.name.clone(), role: principal.role, groups, key })
}

async fn one(state: &AppState, id: Uuid, person: &Person) -> ApiResult<Approval> {
    let row = state.store.get_approval(id).await?;
    let row = row.ok_or_else(|| ApiError::NotFound(format!("no approval with id {id}")))?;
    Ok(shown_all(state, vec![row], person).await?.remove(0))
}

async fn shown_all(state: &AppState, rows: Vec<ApprovalRow>, person: &Person) -> ApiResult<Vec<Approval>> {
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut decisions: HashMap<Uuid, Vec<DecisionRow>> = HashMap::new();
    for d in state.store.decisions_of(&ids).await? {
        decisions.entry(d.approval_id).or_default().push(d);
    }
    let shown_one = |row: ApprovalRow| {
        let its = decisions.remove(&row.id).unwrap_or_default();
        shown(row, its, person)
    };
    Ok(rows.into_iter().map(shown_one).collect())
}

fn shown(row: ApprovalRow, decisions: Vec<DecisionRow>, person: &Person) -> Approval {
    let status = row.status();
    let decided = decisions.iter().any(|d| d.username == person.name);
    let can_decide = !decided && row.refusal(person).is_none();
    Approval {
        id: row.id.to_string(),
        instance_id: row.instance_id.to_string(),
        workflow_id: row.workflow_id.to_string(),
        workflow_name: row.workflow_name,
        node: row.node_id,
        attempt: row.attempt,
        title: row.title,
        description: row.description,
        assignees: row.assignees.0,
        required: row.required.max(1) as u32,
        allow_starter: row.allow_starter,
        form: row.form.map(|f| f.0),
        status,
        decisions: decisions.iter().map(DecisionRow::view).collect(),
        started_by: row.started_by,
        created_at: row.created_at,
        due_at: row.due_at,
        closed_at: row.closed_at,
        can_decide,
    }
}
