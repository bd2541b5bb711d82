//! The command line's device sign-in (RFC 8628): the server begins it at the provider and
//! polls on the command line's behalf, holding the client secret the command line never sees.

use super::audit::audit_role_change;
use super::{admit_rules, configured, session_secs};
use crate::audit::{Actor, AuditSlot};
use crate::auth::oidc::admit::admit;
use crate::auth::oidc::{RefusalCode, Refused};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::ApiJson;
use crate::http::resources::session::{open_session, NO_STORE};
use crate::http::AppState;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use trellis_model::api::{DeviceStarted, Problem, TokenResponse};

#[utoipa::path(
    post,
    path = "/auth/oidc/device",
    operation_id = "beginDeviceSignOn",
    tag = "auth",
    security(()),
    responses(
        (status = 200, description = "Tell the person where to go and which code to enter; then poll `/auth/oidc/device/token`", body = DeviceStarted),
        (status = 404, description = "Single sign-on is not configured, or the provider offers no device flow", body = Problem),
        (status = 503, description = "The provider cannot be reached", body = Problem),
    )
)]
pub(super) async fn device_start(State(state): State<AppState>) -> ApiResult<Json<DeviceStarted>> {
    let oidc = configured(&state)?;
    let started = oidc.provider.start_device().await.map_err(provider_unavailable)?;
    let d = started.ok_or_else(|| {
        ApiError::NotFound("the provider offers no device authorization; sign in through the browser".into())
    })?;
    Ok(Json(DeviceStarted {
        device_code: d.device_code,
        user_code: d.user_code,
        verification_uri: d.verification_uri,
        verification_uri_complete: d.verification_uri_complete,
        expires_in: d.expires_in,
        interval: d.interval.unwrap_or(5).max(1),
    }))
}

fn provider_unavailable(e: crate::auth::oidc::provider::ProviderError) -> ApiError {
    ApiError::Unavailable(e.to_string())
}

/// The person has not finished at the provider yet.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(super) struct DevicePending {
    pending: bool,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DeviceTokenRequest {
    device_code: String,
}

#[utoipa::path(
    post,
    path = "/auth/oidc/device/token",
    operation_id = "finishDeviceSignOn",
    tag = "auth",
    security(()),
    request_body = DeviceTokenRequest,
    responses(
        (status = 200, description = "Signed in", body = TokenResponse),
        (status = 202, description = "The person has not finished yet: poll again after the interval", body = DevicePending),
        (status = 403, description = "Refused (the reason is audited)", body = Problem),
        (status = 404, description = "Single sign-on is not configured", body = Problem),
    )
)]
pub(super) async fn device_token(
    State(state): State<AppState>,
    audit: AuditSlot,
    ApiJson(body): ApiJson<DeviceTokenRequest>,
) -> ApiResult<Response> {
    let oidc = configured(&state)?.clone();
    if body.device_code.is_empty() || body.device_code.len() > 2048 {
        return Err(ApiError::BadRequest("`device_code` is the one `/auth/oidc/device` answered".into()));
    }
    let tokens = match oidc.provider.poll_device(&body.device_code).await {
        Ok(Some(tokens)) => tokens,
        Ok(None) => {
            return Ok((StatusCode::ACCEPTED, [(header::RETRY_AFTER, "5")], Json(serde_json::json!({"pending": true})))
                .into_response())
        }
        Err(e) => {
            return Err(ApiError::Forbidden(format!("single sign-on refused ({}): {e}", RefusalCode::Token.as_str())))
        }
    };
    let refused =
        |r: Refused| ApiError::Forbidden(format!("single sign-on refused ({}): {}", r.code.as_str(), r.reason));
    let identity = oidc.identity(tokens, None).await.map_err(refused)?;
    let rules = admit_rules(&oidc);
    let admitted = admit(&state.store, &rules, &identity).await.map_err(refused)?;
    audit.set(Actor::from(&admitted.principal));
    let (body, _) =
        open_session(&state, &admitted.principal, session_secs(&state, &oidc), Some(&identity.id_token)).await?;
    audit_role_change(&state, &admitted);
    Ok((NO_STORE, Json(body)).into_response())
}
