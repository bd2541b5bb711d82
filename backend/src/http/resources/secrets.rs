//! Secrets: admins create, rotate and delete them; editors list their names to reference them
//! (`{{ secret.NAME }}`); viewers and operators see nothing. No answer carries a value, and the
//! audit trail records the route and the name only (`middleware/audit_trail.rs`: never bodies).

use super::api_keys::bad_field;
use crate::http::middleware::authed::{AsAdmin, AsEditor, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiPath};
use crate::http::AppState;
use crate::secrets::{MAX_DESCRIPTION_CHARS, MAX_VALUE_BYTES};
use crate::store::{SecretInfo, WorkflowTexts};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use secrecy::SecretString;
use std::collections::{BTreeMap, BTreeSet};
use trellis_model::api::{CreateSecret, Items, Problem, Secret, SecretUse, UpdateSecret};
use trellis_model::config::NodeKind;
use trellis_model::secret::is_valid_name;
use trellis_model::Definition;
use utoipa_axum::{router::OpenApiRouter, routes};
use zeroize::Zeroize;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(update, delete))
}

#[utoipa::path(
    get,
    path = "/secrets",
    operation_id = "listSecrets",
    tag = "secrets",
    responses((status = 200, description = "Every secret, by name; never a value", body = Items<Secret>))
)]
async fn list(State(state): State<AppState>, _: Authed<AsEditor>) -> ApiResult<Json<Items<Secret>>> {
    let secrets = state.store.list_secrets().await?;
    let mut used_by = used_by(&state.store.workflow_texts().await?);
    let items = secrets.into_iter().map(|s| view(s, &mut used_by)).collect();
    Ok(Json(Items { items }))
}

#[utoipa::path(
    post,
    path = "/secrets",
    operation_id = "createSecret",
    tag = "secrets",
    request_body = CreateSecret,
    responses(
        (status = 201, description = "Created (the value is never shown again)", body = Secret),
        (status = 409, description = "A secret of that name exists", body = Problem),
        (status = 413, description = "The value is over 64 KiB", body = Problem),
    )
)]
async fn create(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiJson(body): ApiJson<CreateSecret>,
) -> ApiResult<(StatusCode, Json<Secret>)> {
    let CreateSecret { name, value, description } = body;
    let value = checked_value(value)?;
    if !is_valid_name(&name) {
        return Err(bad_field("name", INVALID_NAME.into()));
    }
    let description = checked_description(description)?;
    if !state.engine.secrets().create(&name, &value, description).await? {
        return Err(ApiError::Conflict(format!("a secret named `{name}` exists; rotate it with PUT /secrets/{name}")));
    }
    Ok((StatusCode::CREATED, Json(shown(&state, &name).await?)))
}

#[utoipa::path(
    put,
    path = "/secrets/{name}",
    operation_id = "updateSecret",
    tag = "secrets",
    params(("name" = String, Path, description = "The secret's name")),
    request_body = UpdateSecret,
    responses(
        (status = 200, description = "Changed; the next attempt that uses it gets the new value", body = Secret),
        (status = 404, description = "No such secret", body = Problem),
        (status = 413, description = "The value is over 64 KiB", body = Problem),
    )
)]
async fn update(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<UpdateSecret>,
) -> ApiResult<Json<Secret>> {
    let UpdateSecret { value, description } = body;
    let value = checked_value(value)?;
    let description = checked_description(description)?;
    if !state.engine.secrets().update(&name, Some(&value), description).await? {
        return Err(not_found(&name));
    }
    Ok(Json(shown(&state, &name).await?))
}

#[utoipa::path(
    delete,
    path = "/secrets/{name}",
    operation_id = "deleteSecret",
    tag = "secrets",
    params(("name" = String, Path, description = "The secret's name")),
    responses(
        (status = 204, description = "Deleted; a run that references it fails that node, naming it"),
        (status = 404, description = "No such secret", body = Problem),
    )
)]
async fn delete(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    if !state.store.delete_secret(&name).await? {
        return Err(not_found(&name));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The value as a secret, or why it cannot be one (its text is wiped either way).
fn checked_value(mut value: String) -> ApiResult<SecretString> {
    let len = value.len();
    if len > MAX_VALUE_BYTES {
        value.zeroize();
        return Err(ApiError::PayloadTooLarge(format!(
            "`value` is {len} bytes; a secret's value may be at most {MAX_VALUE_BYTES} bytes (64 KiB)"
        )));
    }
    if value.is_empty() {
        return Err(bad_field("value", "`value` is empty; a secret needs a value".into()));
    }
    Ok(SecretString::from(value))
}

fn checked_description(description: Option<String>) -> ApiResult<Option<String>> {
    let description = description.map(|d| d.trim().to_owned());
    if description.as_ref().is_some_and(|d| d.chars().count() > MAX_DESCRIPTION_CHARS) {
        return Err(bad_field("description", format!("`description` is over {MAX_DESCRIPTION_CHARS} characters")));
    }
    Ok(description)
}

/// Not echoing the name: a value pasted into the wrong field must not reach the answer or the
/// audit trail's `detail`.
const INVALID_NAME: &str = "`name` is not a secret name: start with a letter or _, then letters, digits or _, at most \
                            64 in all (it is referenced as {{ secret.NAME }})";

fn not_found(name: &str) -> ApiError {
    ApiError::NotFound(format!("there is no secret named `{name}`"))
}

/// The secret `name` as answered after a change.
async fn shown(state: &AppState, name: &str) -> ApiResult<Secret> {
    let info = state.store.secret_info(name).await?.ok_or_else(|| not_found(name))?;
    Ok(view(info, &mut used_by(&state.store.workflow_texts().await?)))
}

/// For each secret name, its users as (workflow name, workflow id): sorted by name.
type Users = BTreeMap<String, BTreeSet<(String, String)>>;

fn view(info: SecretInfo, users: &mut Users) -> Secret {
    let users = users.remove(&info.name).unwrap_or_default();
    Secret {
        name: info.name,
        description: info.description,
        created_at: info.created_at,
        updated_at: info.updated_at,
        used_by: users.into_iter().map(|(name, id)| SecretUse { id, name }).collect(),
    }
}

/// For each secret name, the workflows whose draft or latest version references it.
fn used_by(workflows: &[WorkflowTexts]) -> Users {
    let mut users = Users::new();
    for w in workflows {
        for name in references(&w.draft.0).chain(w.published.iter().flat_map(|p| references(&p.0))) {
            users.entry(name).or_default().insert((w.name.clone(), w.id.to_string()));
        }
    }
    users
}

/// Every secret a definition's nodes reference.
pub fn references(def: &Definition) -> impl Iterator<Item = String> + '_ {
    def.nodes.iter().flat_map(|node| {
        let kind = NodeKind::parse(&node.kind);
        kind.and_then(|k| trellis_model::secret::node_references(k, &node.config).ok()).unwrap_or_default()
    })
}
