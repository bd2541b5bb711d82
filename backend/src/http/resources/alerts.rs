//! Alert rules (`crate::alerts`): editors and admins create and list them and read each rule's
//! delivery log; viewers and operators get 403. A rule is owned like a saved view: only its
//! creator and admins send a test or delete it (403 for other editors), and others see where it
//! sends only as its scheme and host, since a receiver URL is a credential (Slack's are). A
//! rule's secret is shown once, in the create answer, as a webhook trigger's is.

use super::api_keys::bad_field;
use crate::alerts::send::{message_id, post};
use crate::alerts::test_body;
use crate::auth::Principal;
use crate::http::middleware::authed::{AsEditor, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use crate::http_client::guarded_client;
use crate::store::{AlertAttemptRow, AlertRuleRow, NewDelivery};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use chrono::Utc;
use std::collections::HashMap;
use std::sync::Arc;
use trellis_model::api::{
    AlertAttempt, AlertDelivery, AlertRule, AlertTestResult, AlertWhen, CreatedAlertRule, Items, NewAlertRule, Problem,
};
use trellis_model::validate::MAX_DURATION_MS;
use trellis_model::Role;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub const MAX_NAME_CHARS: usize = 200;
pub const MAX_URL_BYTES: usize = 2048;
/// Deliveries shown per rule, newest first.
const LOG_LENGTH: i64 = 100;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(delete))
        .routes(routes!(send_test))
        .routes(routes!(deliveries))
}

#[utoipa::path(
    get,
    path = "/alerts",
    operation_id = "listAlerts",
    tag = "alerts",
    responses((status = 200, description = "Every alert rule, oldest first; never a secret", body = Items<AlertRule>))
)]
async fn list(State(state): State<AppState>, auth: Authed<AsEditor>) -> ApiResult<Json<Items<AlertRule>>> {
    let rules = state.store.alert_rules().await?;
    let mut ids: Vec<Uuid> = rules.iter().filter_map(|r| r.workflow_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let names: HashMap<Uuid, String> = state.store.workflow_names(&ids).await?.into_iter().collect();
    let items =
        rules.iter().map(|r| shown(r, r.workflow_id.and_then(|w| names.get(&w).cloned()), &auth.principal)).collect();
    Ok(Json(Items { items }))
}

#[utoipa::path(
    post,
    path = "/alerts",
    operation_id = "createAlert",
    tag = "alerts",
    request_body = NewAlertRule,
    responses(
        (status = 201, description = "Created; `secret` signs its deliveries and is not shown again", body = CreatedAlertRule),
        (
            status = 422,
            description = "A field is invalid (`errors` names it): a `url` the `http` node may not reach, an unknown \
                           `workflow` (or any `workflow` for `backup_failed`), `threshold` missing for `queue_depth` or given for another kind",
            body = Problem
        ),
    )
)]
async fn create(
    State(state): State<AppState>,
    auth: Authed<AsEditor>,
    ApiJson(body): ApiJson<NewAlertRule>,
) -> ApiResult<(StatusCode, Json<CreatedAlertRule>)> {
    let workflow = checked(&state, &body).await?;
    let workflow_name = match workflow {
        Some(id) => Some(state.store.get_workflow(id).await?.ok_or_else(|| unknown_workflow(id))?.name),
        None => None,
    };
    let row = AlertRuleRow {
        id: Uuid::now_v7(),
        name: body.name.trim().to_owned(),
        event: body.when,
        workflow_id: workflow,
        url: body.url.trim().to_owned(),
        secret: crate::standard_webhooks::new_secret(),
        threshold: body.threshold,
        for_ms: body.for_ms,
        dedupe_ms: body.dedupe_ms,
        over_since: None,
        created_by: auth.principal.name.clone(),
        created_at: Utc::now(),
        owner_id: Some(auth.principal.id.clone()),
    };
    state.store.insert_alert_rule(&row).await.map_err(|e| match e {
        crate::store::StoreError::Database(sqlx::Error::Database(db)) if db.is_foreign_key_violation() => {
            unknown_workflow(workflow.unwrap_or_default())
        }
        other => other.into(),
    })?;
    let created = CreatedAlertRule { rule: shown(&row, workflow_name, &auth.principal), secret: row.secret.clone() };
    Ok((StatusCode::CREATED, Json(created)))
}

/// Every field's check, each a 422 naming it; the workflow id parsed.
async fn checked(state: &AppState, body: &NewAlertRule) -> ApiResult<Option<Uuid>> {
    let name = body.name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
        return Err(bad_field("name", format!("`name` must be 1-{MAX_NAME_CHARS} characters")));
    }
    let workflow = match &body.workflow {
        Some(_) if body.when == AlertWhen::BackupFailed => {
            return Err(bad_field(
                "workflow",
                "`backup_failed` is about the whole database: leave `workflow` out".into(),
            ))
        }
        Some(w) => Some(Uuid::parse_str(w).map_err(|_| bad_field("workflow", format!("`{w}` is not a workflow id")))?),
        None => None,
    };
    let queue = body.when == AlertWhen::QueueDepth;
    match (queue, body.threshold) {
        (true, None) => return Err(bad_field("threshold", "`queue_depth` needs a `threshold` (a queue depth)".into())),
        (true, Some(n)) if n < 0 => return Err(bad_field("threshold", "`threshold` must be 0 or more".into())),
        (false, Some(_)) => return Err(bad_field("threshold", "`threshold` is for `queue_depth` rules only".into())),
        _ => {}
    }
    if !queue && body.for_ms.is_some() {
        return Err(bad_field("for_ms", "`for_ms` is for `queue_depth` rules only".into()));
    }
    for (field, value) in [("for_ms", body.for_ms), ("dedupe_ms", body.dedupe_ms)] {
        if value.is_some_and(|ms| !(0..=MAX_DURATION_MS as i64).contains(&ms)) {
            return Err(bad_field(field, format!("`{field}` must be between 0 and {MAX_DURATION_MS} ms")));
        }
    }
    let url = body.url.trim();
    if url.len() > MAX_URL_BYTES {
        return Err(bad_field("url", format!("`url` is longer than {MAX_URL_BYTES} bytes")));
    }
    // The `http` node's policy: what a workflow may not call, an alert may not either.
    if let Err(why) = state.engine.config().http_allow.check_url(url).await {
        return Err(bad_field("url", format!("`url` cannot be used: {why}")));
    }
    Ok(workflow)
}

fn unknown_workflow(id: Uuid) -> ApiError {
    bad_field("workflow", format!("no workflow with id {id}"))
}

/// Whether `who` may test and delete `rule`: its creator (by id; by name for rules made before
/// owners were kept) and admins.
fn manages(rule: &AlertRuleRow, who: &Principal) -> bool {
    who.role == Role::Admin
        || match &rule.owner_id {
            Some(owner) => *owner == who.id,
            None => rule.created_by == who.name,
        }
}

/// `url` as a caller who does not manage its rule sees it: scheme and host, no path, query or
/// credentials.
fn host_only(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) => format!("{}://{}/…", parsed.scheme(), parsed.host_str().unwrap_or("")),
        Err(_) => "…".to_owned(),
    }
}

/// Rule `id`, if `who` manages it (see [`manages`]): 404 if there is none, 403 if it is
/// another editor's.
async fn managed(state: &AppState, id: Uuid, who: &Principal) -> ApiResult<AlertRuleRow> {
    let rule = state.store.alert_rule(id).await?.ok_or_else(|| not_found(id))?;
    if !manages(&rule, who) {
        return Err(ApiError::Forbidden(format!(
            "the alert rule `{}` is {}'s; only they or an admin may test or delete it",
            rule.name, rule.created_by
        )));
    }
    Ok(rule)
}

fn shown(r: &AlertRuleRow, workflow_name: Option<String>, who: &Principal) -> AlertRule {
    let can_manage = manages(r, who);
    AlertRule {
        can_manage,
        id: r.id.to_string(),
        name: r.name.clone(),
        when: r.event,
        workflow: r.workflow_id.map(|w| w.to_string()),
        workflow_name,
        url: if can_manage { r.url.clone() } else { host_only(&r.url) },
        threshold: r.threshold,
        for_ms: r.for_ms,
        dedupe_ms: r.dedupe_ms,
        created_by: r.created_by.clone(),
        created_at: r.created_at,
    }
}

#[utoipa::path(
    delete,
    path = "/alerts/{id}",
    operation_id = "deleteAlert",
    tag = "alerts",
    responses(
        (status = 204, description = "Deleted, with its delivery log; nothing more is sent"),
        (status = 403, description = "Another editor's rule (only its creator or an admin deletes it)", body = Problem),
        (status = 404, description = "No such rule", body = Problem),
    )
)]
async fn delete(
    State(state): State<AppState>,
    auth: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    managed(&state, id, &auth.principal).await?;
    if !state.store.delete_alert_rule(id).await? {
        return Err(not_found(id));
    }
    Ok(StatusCode::NO_CONTENT)
}

fn not_found(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no alert rule with id {id}"))
}

#[utoipa::path(
    post,
    path = "/alerts/{id}/test",
    operation_id = "testAlert",
    tag = "alerts",
    responses(
        (status = 200, description = "A signed test delivery was posted now; how it went (also in the log)", body = AlertTestResult),
        (status = 403, description = "Another editor's rule (only its creator or an admin tests it)", body = Problem),
        (status = 404, description = "No such rule", body = Problem),
    )
)]
async fn send_test(
    State(state): State<AppState>,
    auth: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<AlertTestResult>> {
    let rule = managed(&state, id, &auth.principal).await?;
    let policy = state.engine.config().http_allow.clone();
    let client = guarded_client(Arc::new(policy.clone()));
    let delivery = Uuid::now_v7();
    let body = test_body((&rule.id, &rule.name)).to_string();
    let timeout = crate::alerts::AlertSettings::from_config(&state.serve).timeout;
    let posted = post(&client, &policy, (&rule.url, &rule.secret), &message_id(delivery), &body, timeout).await;
    let at = Utc::now();
    let attempt = AlertAttemptRow {
        delivery_id: delivery,
        attempt: 1,
        at,
        status_code: posted.status_code,
        error: posted.error.clone(),
    };
    let record = NewDelivery {
        id: delivery,
        rule_id: rule.id,
        event: trellis_model::AlertEvent::Test,
        source_key: format!("test:{delivery}"),
        group_key: None,
        instance_id: None,
        body,
        now: at,
        dedupe_since: None,
        sent: Some((posted.delivered(), attempt)),
    };
    state.store.record_delivery(&record).await?;
    let attempt = AlertAttempt { attempt: 1, at, status_code: posted.status_code, error: posted.error.clone() };
    Ok(Json(AlertTestResult { delivered: posted.delivered(), attempt, delivery: delivery.to_string() }))
}

#[utoipa::path(
    get,
    path = "/alerts/{id}/deliveries",
    operation_id = "listAlertDeliveries",
    tag = "alerts",
    responses(
        (status = 200, description = "The rule's latest 100 deliveries, newest first, each with its attempts", body = Items<AlertDelivery>),
        (status = 404, description = "No such rule", body = Problem),
    )
)]
async fn deliveries(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<Json<Items<AlertDelivery>>> {
    state.store.alert_rule(id).await?.ok_or_else(|| not_found(id))?;
    let (rows, attempts) = state.store.deliveries_of(id, LOG_LENGTH).await?;
    let mut by_delivery: HashMap<Uuid, Vec<AlertAttempt>> = HashMap::new();
    for a in attempts {
        let attempt = AlertAttempt { attempt: a.attempt, at: a.at, status_code: a.status_code, error: a.error };
        by_delivery.entry(a.delivery_id).or_default().push(attempt);
    }
    let items = rows
        .into_iter()
        .map(|d| AlertDelivery {
            id: d.id.to_string(),
            event: d.event,
            instance_id: d.instance_id.map(|i| i.to_string()),
            created_at: d.created_at,
            status: d.status,
            suppressed: d.suppressed,
            attempts: by_delivery.remove(&d.id).unwrap_or_default(),
        })
        .collect();
    Ok(Json(Items { items }))
}
