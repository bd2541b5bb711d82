//! `GET /audit`: the audit log, newest first, for admins. The rows are written by the
//! audit-trail middleware (`middleware::audit_trail`).

use crate::http::middleware::authed::{AsAdmin, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{next_cursor, page_limit, ApiQuery};
use crate::http::AppState;
use crate::store::{AuditQuery, AuditRow};
use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use trellis_model::api::{AuditActor, AuditEntry, Page};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

const DEFAULT_PAGE: i64 = 50;
pub const MAX_PAGE: i64 = 500;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// A principal's name (`alice`, `key:ci`, `anonymous`, or the username a sign-in tried) or id.
    actor: Option<String>,
    /// Part of the action, case-insensitive: `versions`, `DELETE `, `POST /api/v1/users`.
    action: Option<String>,
    /// The resource id the action concerned.
    target: Option<String>,
    /// Only entries at or after this time (RFC 3339).
    since: Option<DateTime<Utc>>,
    /// Only entries before this time (RFC 3339).
    until: Option<DateTime<Utc>>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Entries per page, 1-500 (default 50).
    limit: Option<i64>,
}

/// The audit log, newest first.
#[utoipa::path(
    get,
    path = "/audit",
    operation_id = "listAuditEntries",
    tag = "audit",
    params(ListParams),
    responses((status = 200, description = "A page of audit entries, newest first", body = AuditPage)),
    security(("bearer" = []), ("cookie" = []))
)]
async fn list(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiQuery(p): ApiQuery<ListParams>,
) -> ApiResult<Json<Page<AuditEntry>>> {
    let limit = page_limit(p.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let before = p
        .cursor
        .map(|c| Uuid::parse_str(&c).map_err(|_| ApiError::BadRequest("`cursor` is not one this API returned".into())))
        .transpose()?;
    let text = |v: Option<String>| v.filter(|s| !s.is_empty());
    let query = AuditQuery {
        actor: text(p.actor),
        action_contains: text(p.action),
        target: text(p.target),
        since: p.since,
        until: p.until,
        before,
        limit: limit + 1,
    };
    let mut rows = state.store.list_audit(&query).await?;
    let next_cursor = next_cursor(&mut rows, limit, |r| r.id.to_string());
    Ok(Json(Page { items: rows.into_iter().map(entry).collect(), next_cursor }))
}

/// `Page<AuditEntry>` under a name the OpenAPI document can reference.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub struct AuditPage {
    items: Vec<AuditEntry>,
    next_cursor: Option<String>,
}

fn entry(r: AuditRow) -> AuditEntry {
    AuditEntry {
        id: r.id.to_string(),
        at: r.at,
        actor: AuditActor { id: r.actor_id, name: r.actor_name, role: r.actor_role },
        action: r.action,
        target: r.target,
        status: u16::try_from(r.status).unwrap_or_default(),
        detail: r.detail,
        request_id: r.request_id,
    }
}
