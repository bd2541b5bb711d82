//! Managing triggers: create, list, show, change (pause/resume), delete, rotate a webhook's
//! secret, the delivery log, and cron previews. Webhook deliveries themselves arrive at
//! `/hooks/{id}` (see `hooks.rs`).

mod all;
mod brokers;
pub mod deliveries;
mod preview;

use preview::{schedule, times, DEFAULT_PREVIEW};

use crate::http::middleware::authed::{AsEditor, AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{optional_json, refused, ApiJson, ApiPath, RawBody};
use crate::http::middleware::strict;
use crate::http::AppState;
use crate::standard_webhooks::new_secret;
use crate::store::{SecretRotation, TriggerChange, TriggerRow};
use crate::triggers::TriggerSpec;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::Json;
use chrono::{Duration, Utc};
use serde_json::{Map, Value};
use trellis_model::api::{CreatedTrigger, Items, Problem, RotateSecret, RotatedSecret, Trigger};
use trellis_model::{Issue, TriggerKind};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub const MAX_NAME_LEN: usize = 200;
const DEFAULT_GRACE_MS: u64 = 24 * 3600 * 1000;
pub const MAX_GRACE_MS: u64 = 30 * 24 * 3600 * 1000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, update, remove))
        .routes(routes!(rotate))
        .merge(all::router())
        .merge(deliveries::router())
        .merge(preview::router())
}

#[utoipa::path(
    post,
    path = "/workflows/{id}/triggers",
    operation_id = "createTrigger",
    tag = "triggers",
    request_body(
        content = Value,
        description = "`{kind: \"webhook\" | \"cron\" | \"nats\" | \"amqp\" | \"mqtt\", name?, paused?, ...the kind's settings}`"
    ),
    responses(
        (
            status = 201,
            description = "Created; a webhook's `url` and `secret` (shown this once), a cron's `next_fire_times`",
            body = CreatedTrigger
        ),
        (status = 422, description = "Invalid settings; `errors` lists what to fix", body = Problem),
    )
)]
async fn create(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(workflow): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<CreatedTrigger>)> {
    state
        .store
        .get_workflow(workflow)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no workflow with id {workflow}")))?;
    let mut fields = object(body)?;
    let name = take_name(&mut fields)?.flatten();
    let paused = take_paused(&mut fields)?.unwrap_or(false);
    let spec = parse_spec(&state, Value::Object(fields)).await?;
    let now = Utc::now();
    let next_fire_at = match (&spec, paused) {
        (TriggerSpec::Cron(cron), false) => schedule(cron)?.next_after(now),
        _ => None,
    };
    let id = Uuid::now_v7();
    check_cron_input(&state, workflow, id, &spec, next_fire_at).await?;
    let secret = matches!(spec, TriggerSpec::Webhook(_)).then(new_secret);
    let row = TriggerRow {
        id,
        workflow_id: workflow,
        kind: spec.kind(),
        name,
        paused,
        spec: sqlx::types::Json(serde_json::to_value(&spec).map_err(|e| ApiError::Internal(e.into()))?),
        secret: secret.clone(),
        previous_secret: None,
        previous_secret_until: None,
        next_fire_at,
        pending_fire_at: None,
        created_at: now,
        updated_at: now,
    };
    brokers::check_reachable(&state, &row, &spec).await?;
    state.store.insert_trigger(&row).await?;
    let next_fire_times = match &spec {
        TriggerSpec::Cron(cron) => Some(times(&schedule(cron)?, DEFAULT_PREVIEW)),
        _ => None,
    };
    // The secret is shown once: it is needed to sign deliveries and is never returned again.
    let trigger = brokers::with_consumers(&state, vec![view(&state, &headers, &row)]).await?.remove(0);
    let body = CreatedTrigger { trigger, secret, next_fire_times };
    Ok((StatusCode::CREATED, Json(body)))
}

#[utoipa::path(
    get,
    path = "/workflows/{id}/triggers",
    operation_id = "listWorkflowTriggers",
    tag = "triggers",
    responses((status = 200, description = "The workflow's triggers", body = Items<Trigger>))
)]
async fn list(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(workflow): ApiPath<Uuid>,
    headers: HeaderMap,
) -> ApiResult<Json<Items<Trigger>>> {
    state
        .store
        .get_workflow(workflow)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no workflow with id {workflow}")))?;
    let rows = state.store.list_triggers(workflow).await?;
    let items = brokers::with_consumers(&state, rows.iter().map(|t| view(&state, &headers, t)).collect()).await?;
    Ok(Json(Items { items }))
}

#[utoipa::path(
    get,
    path = "/triggers/{id}",
    operation_id = "showTrigger",
    tag = "triggers",
    responses((status = 200, description = "The trigger (without its secret)", body = Trigger))
)]
async fn show(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ApiPath(id): ApiPath<Uuid>,
    headers: HeaderMap,
) -> ApiResult<Json<Trigger>> {
    let trigger = view(&state, &headers, &find(&state, id).await?);
    Ok(Json(brokers::with_consumers(&state, vec![trigger]).await?.remove(0)))
}

/// A merge of the given fields into the trigger: `name`, `paused`, and the kind's settings.
/// A new schedule, a pause or a resume recomputes the next tick from now (no catch-up).
#[utoipa::path(
    patch,
    path = "/triggers/{id}",
    operation_id = "updateTrigger",
    tag = "triggers",
    request_body(content = Value, description = "The fields to change: `name`, `paused`, the kind's settings"),
    responses(
        (status = 200, description = "Changed", body = Trigger),
        (status = 422, description = "Invalid settings, or a change of `kind`", body = Problem),
    )
)]
async fn update(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<Trigger>> {
    let current = find(&state, id).await?;
    let mut fields = object(body)?;
    let mut change =
        TriggerChange { name: take_name(&mut fields)?, paused: take_paused(&mut fields)?, ..Default::default() };
    let mut merged = current.spec.0.clone();
    let respec = !fields.is_empty();
    if let (Value::Object(stored), true) = (&mut merged, respec) {
        stored.extend(fields);
    }
    let spec = parse_spec(&state, merged).await?;
    if spec.kind() != current.kind {
        return Err(ApiError::invalid("a trigger's `kind` cannot change; create a new trigger instead", vec![]));
    }
    let paused = change.paused.unwrap_or(current.paused);
    if let TriggerSpec::Cron(cron) = &spec {
        if respec || paused != current.paused {
            change.next_fire_at = Some(if paused { None } else { schedule(cron)?.next_after(Utc::now()) });
        }
    }
    if respec {
        check_cron_input(&state, current.workflow_id, id, &spec, change.next_fire_at.flatten()).await?;
        brokers::check_reachable(&state, &current, &spec).await?;
        change.spec = Some(serde_json::to_value(&spec).map_err(|e| ApiError::Internal(e.into()))?);
    }
    let row = state.store.update_trigger(id, &change).await?.ok_or_else(|| not_found(id))?;
    Ok(Json(brokers::with_consumers(&state, vec![view(&state, &headers, &row)]).await?.remove(0)))
}

#[utoipa::path(
    delete,
    path = "/triggers/{id}",
    operation_id = "deleteTrigger",
    tag = "triggers",
    responses((status = 204, description = "Deleted"))
)]
async fn remove(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    if state.store.delete_trigger(id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(id))
    }
}

#[utoipa::path(
    post,
    path = "/triggers/{id}/rotate-secret",
    operation_id = "rotateTriggerSecret",
    tag = "triggers",
    request_body(content = RotateSecret, description = "Optional: how long the old secret stays valid"),
    responses(
        (status = 200, description = "The new secret, shown this once", body = RotatedSecret),
        (status = 409, description = "Only webhook triggers have a secret", body = Problem),
    )
)]
async fn rotate(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiPath(id): ApiPath<Uuid>,
    RawBody(body): RawBody,
) -> ApiResult<Json<RotatedSecret>> {
    let request: RotateSecret = optional_json(&body, "rotation request")?;
    let grace_ms = request.grace_ms.unwrap_or(DEFAULT_GRACE_MS);
    if grace_ms > MAX_GRACE_MS {
        return Err(ApiError::invalid(format!("`grace_ms` must be at most {MAX_GRACE_MS} (30 days)"), vec![]));
    }
    let trigger = find(&state, id).await?;
    if trigger.secret.is_none() {
        return Err(ApiError::Conflict("only webhook triggers have a secret".into()));
    }
    let rotation =
        SecretRotation { secret: new_secret(), previous_until: Utc::now() + Duration::milliseconds(grace_ms as i64) };
    state.store.rotate_secret(id, &rotation).await?.ok_or_else(|| not_found(id))?;
    Ok(Json(RotatedSecret {
        id: id.to_string(),
        secret: rotation.secret,
        previous_secret_valid_until: rotation.previous_until,
    }))
}

/// A schedule's input is fixed (`{"trigger_id","scheduled_at"}`): one the workflow's latest
/// `input_schema` refuses would fail every tick, so the save is refused instead (422 listing
/// each violation).
async fn check_cron_input(
    state: &AppState,
    workflow: Uuid,
    id: Uuid,
    spec: &TriggerSpec,
    tick: Option<chrono::DateTime<Utc>>,
) -> ApiResult<()> {
    let TriggerSpec::Cron(_) = spec else { return Ok(()) };
    let input = crate::triggers::fire::cron_input(id, tick.unwrap_or_else(Utc::now));
    state.engine.check_input(workflow, &input).await.map_err(|e| match ApiError::from(e) {
        ApiError::Unprocessable { detail, errors } => {
            ApiError::invalid(format!("every tick of this schedule would be refused: {detail}"), errors)
        }
        other => other,
    })
}

pub(super) fn object(body: Value) -> ApiResult<Map<String, Value>> {
    match body {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::invalid("the body must be a JSON object", vec![])),
    }
}

/// `Some(None)` when the name is cleared with `null`.
fn take_name(fields: &mut Map<String, Value>) -> ApiResult<Option<Option<String>>> {
    match fields.remove("name") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(name)) if !name.trim().is_empty() && name.len() <= MAX_NAME_LEN && !name.contains('\0') => {
            Ok(Some(Some(name.trim().to_owned())))
        }
        Some(_) => {
            Err(ApiError::invalid(format!("`name` must be 1-{MAX_NAME_LEN} characters of text, or null"), vec![]))
        }
    }
}

fn take_paused(fields: &mut Map<String, Value>) -> ApiResult<Option<bool>> {
    match fields.remove("paused") {
        None => Ok(None),
        Some(Value::Bool(paused)) => Ok(Some(paused)),
        Some(_) => Err(ApiError::invalid("`paused` must be true or false", vec![])),
    }
}

/// The kind and its settings; shape errors and every settings problem are 422s.
async fn parse_spec(state: &AppState, fields: Value) -> ApiResult<TriggerSpec> {
    if serde_json::to_string(&fields).is_ok_and(|s| s.contains("\\u0000")) {
        return Err(ApiError::invalid("trigger settings must not contain NUL characters", vec![]));
    }
    let spec = read_spec(fields)?;
    // The sandbox's own trouble (busy, a worker lost) is a 503, not the settings' fault.
    let issues = spec.check(state.engine.sandbox()).await?;
    if issues.is_empty() {
        Ok(spec)
    } else {
        Err(ApiError::invalid("the trigger's settings are not valid; see `errors` for what to fix", issues))
    }
}

/// The settings of the kind `kind` names, read by `strict` like any body (a whole float is
/// taken where an integer is asked for, a refusal names the field). `kind` picks the struct
/// here: deserializing the internally tagged `TriggerSpec` would buffer the settings and read
/// them past `strict`.
fn read_spec(fields: Value) -> ApiResult<TriggerSpec> {
    let Value::Object(mut settings) = fields else {
        return Err(ApiError::invalid("a trigger must be a JSON object", vec![]));
    };
    let kind = settings.remove("kind");
    let settings = Value::Object(settings);
    let spec = match kind.as_ref().and_then(Value::as_str) {
        Some("webhook") => strict::from_value(settings, "trigger").map(TriggerSpec::Webhook),
        Some("cron") => strict::from_value(settings, "trigger").map(TriggerSpec::Cron),
        Some("nats") => strict::from_value(settings, "trigger").map(TriggerSpec::Nats),
        Some("amqp") => strict::from_value(settings, "trigger").map(TriggerSpec::Amqp),
        Some("mqtt") => strict::from_value(settings, "trigger").map(TriggerSpec::Mqtt),
        _ => {
            let message = "`kind` must be `webhook`, `cron`, `nats`, `amqp` or `mqtt`";
            return Err(ApiError::invalid(message, vec![Issue::new("invalid_trigger", message).path("kind")]));
        }
    };
    spec.map_err(refused)
}

pub(super) async fn find(state: &AppState, id: Uuid) -> ApiResult<TriggerRow> {
    state.store.get_trigger(id).await?.ok_or_else(|| not_found(id))
}

fn not_found(id: Uuid) -> ApiError {
    ApiError::NotFound(format!("no trigger with id {id}"))
}

/// A trigger as clients see it: never its secrets.
fn view(state: &AppState, headers: &HeaderMap, t: &TriggerRow) -> Trigger {
    let settings = match &t.spec.0 {
        Value::Object(spec) => spec.iter().filter(|(k, _)| *k != "kind").map(|(k, v)| (k.clone(), v.clone())).collect(),
        _ => Map::new(),
    };
    let settings = brokers::without_password(settings);
    let webhook = t.kind == TriggerKind::Webhook;
    let grace = t.previous_secret_until.filter(|until| *until > Utc::now());
    Trigger {
        id: t.id.to_string(),
        workflow_id: t.workflow_id.to_string(),
        workflow_name: None,
        kind: t.kind,
        name: t.name.clone(),
        paused: t.paused,
        created_at: t.created_at,
        updated_at: t.updated_at,
        url: webhook.then(|| hook_url(state, headers, t.id)),
        previous_secret_valid_until: webhook.then_some(grace),
        next_fire_at: (t.kind == TriggerKind::Cron).then_some(t.next_fire_at),
        pending_fire_at: (t.kind == TriggerKind::Cron).then_some(t.pending_fire_at),
        consumer: None,
        settings,
    }
}

/// Where senders post: under `TRELLIS_PUBLIC_URL` when set, else this request's host.
fn hook_url(state: &AppState, headers: &HeaderMap, id: Uuid) -> String {
    let base = match &state.serve.public_url {
        Some(base) => base.trim_end_matches('/').to_owned(),
        None => {
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
            format!("http://{host}")
        }
    };
    format!("{base}/hooks/{id}")
}
