//! Single sign-on's routes: how one may sign in (`/auth/providers`), the browser's way
//! through the provider (`/auth/oidc/login` → provider → `/auth/oidc/callback`), the command
//! line's device flow, and the admins' mapping preview. The protocol is `crate::auth::oidc`;
//! this file is its HTTP face and its audit trail.

use super::session::{open_session, NO_STORE};
use crate::audit::{Actor, AuditSlot};
use crate::auth::oidc::admit::{admit, AdmitRules};
use crate::auth::oidc::settings::LOGIN_PATH;
use crate::auth::oidc::{checked_return_to, Admitted, Oidc, RefusalCode, Refused};
use crate::http::middleware::authed::{AsAdmin, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiQuery};
use crate::http::AppState;
use crate::store::AuditRow;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use trellis_model::api::{AuthProviders, MappingPreview, MappingPreviewRequest, OidcProvider, Problem, TokenResponse};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

/// Keeps an attempt's `state` in the browser that began it, so a callback carrying another
/// browser's state (a forced sign-in) finds no match. `Lax`: it must come back on the
/// provider's top-level redirect.
const STATE_COOKIE: &str = "trellis_oidc_state";
const CALLBACK_ROUTE: &str = "GET /api/v1/auth/oidc/callback";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(providers))
        .routes(routes!(login))
        .routes(routes!(callback))
        .routes(routes!(mapping_preview))
        .routes(routes!(device_start))
        .routes(routes!(device_token))
}

#[utoipa::path(
    get,
    path = "/auth/providers",
    operation_id = "listSignInProviders",
    tag = "auth",
    security(()),
    responses((status = 200, description = "How one may sign in here", body = AuthProviders))
)]
async fn providers(State(state): State<AppState>) -> impl IntoResponse {
    let oidc = match state.oidc.as_ref() {
        Some(oidc) => Some(OidcProvider {
            name: oidc.settings().name.clone(),
            login_url: LOGIN_PATH.to_owned(),
            reachable: oidc.provider.discovery().await.is_ok(),
        }),
        None => None,
    };
    (NO_STORE, Json(AuthProviders { password: state.serve.password_login, oidc }))
}

fn configured(state: &AppState) -> ApiResult<&Arc<Oidc>> {
    state
        .oidc
        .as_ref()
        .ok_or_else(|| ApiError::NotFound("single sign-on is not configured here (TRELLIS_OIDC_ISSUER)".into()))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
struct LoginQuery {
    /// A path on this server to land on after signing in (default `/`).
    return_to: Option<String>,
}

#[utoipa::path(
    get,
    path = "/auth/oidc/login",
    operation_id = "beginSingleSignOn",
    tag = "auth",
    security(()),
    params(LoginQuery),
    responses(
        (status = 302, description = "To the provider's sign-in (authorization code with PKCE S256, `state` and `nonce`)"),
        (status = 400, description = "`return_to` is not a path on this server", body = Problem),
        (status = 404, description = "Single sign-on is not configured", body = Problem),
    )
)]
async fn login(
    State(state): State<AppState>,
    jar: CookieJar,
    ApiQuery(query): ApiQuery<LoginQuery>,
) -> ApiResult<Response> {
    let oidc = configured(&state)?;
    let return_to = checked_return_to(query.return_to.as_deref()).map_err(ApiError::BadRequest)?;
    match oidc.begin(&state.store, &return_to, chrono::Utc::now()).await {
        Ok((url, attempt_state)) => {
            let cookie = Cookie::build((STATE_COOKIE, attempt_state))
                .http_only(true)
                .same_site(SameSite::Lax)
                .secure(state.serve.secure_cookies)
                .path("/api/v1/auth/oidc")
                .max_age(cookie::time::Duration::minutes(10))
                .build();
            Ok((NO_STORE, jar.add(cookie), Redirect::to(&url)).into_response())
        }
        Err(refused) => {
            tracing::warn!(reason = %refused.reason, "single sign-on could not begin");
            Ok(to_sign_in_page(refused.code).into_response())
        }
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    /// The provider's refusal (`access_denied` when the person cancelled).
    error: Option<String>,
    error_description: Option<String>,
}

#[utoipa::path(
    get,
    path = "/auth/oidc/callback",
    operation_id = "finishSingleSignOn",
    tag = "auth",
    security(()),
    params(CallbackQuery),
    responses(
        (
            status = 302,
            description = "Signed in: to `return_to` with the session cookie set. Refused: to `/login?error=CODE`, nothing set, the reason audited"
        ),
        (status = 404, description = "Single sign-on is not configured", body = Problem),
    )
)]
async fn callback(
    State(state): State<AppState>,
    jar: CookieJar,
    ApiQuery(query): ApiQuery<CallbackQuery>,
) -> ApiResult<Response> {
    let oidc = configured(&state)?.clone();
    let browser_state = jar.get(STATE_COOKIE).map(|c| c.value().to_owned());
    let jar = jar.remove(Cookie::build(STATE_COOKIE).path("/api/v1/auth/oidc"));
    match sign_in(&state, &oidc, browser_state, query).await {
        Ok((admitted, return_to, id_token)) => {
            let ttl = session_secs(&state, &oidc);
            let (_, session_cookie) = open_session(&state, &admitted.principal, ttl, Some(&id_token)).await?;
            audit_admitted(&state, &admitted, CALLBACK_ROUTE, 302);
            Ok((NO_STORE, jar.add(session_cookie), Redirect::to(&return_to)).into_response())
        }
        Err((refused, who)) => {
            audit_refused(&state, &refused, who.as_deref());
            Ok((NO_STORE, jar, to_sign_in_page(refused.code)).into_response())
        }
    }
}

type SignedIn = (Admitted, String, String);

/// The callback's checks in order; a refusal carries the name of who tried, when known.
async fn sign_in(
    state: &AppState,
    oidc: &Oidc,
    browser_state: Option<String>,
    query: CallbackQuery,
) -> Result<SignedIn, (Refused, Option<String>)> {
    let refuse = |code, reason: String| (Refused::new(code, reason), None);
    if let Some(error) = query.error {
        let description = query.error_description.unwrap_or_default();
        let said: String = format!("{error} {description}").chars().take(300).collect();
        return Err(refuse(RefusalCode::Provider, format!("the provider answered: {}", said.trim_end())));
    }
    let Some(sent_state) = query.state.filter(|s| !s.is_empty() && s.len() <= 256) else {
        return Err(refuse(RefusalCode::State, "the callback carries no state".into()));
    };
    if browser_state.as_deref() != Some(sent_state.as_str()) {
        return Err(refuse(RefusalCode::State, "the callback's state is not the one this browser began".into()));
    }
    let now = chrono::Utc::now();
    let attempt = match state.store.take_oidc_attempt(&sent_state, now).await {
        Ok(Some(attempt)) => attempt,
        Ok(None) => {
            return Err(refuse(
                RefusalCode::State,
                "no sign-in is waiting for this state (used, expired or unknown)".into(),
            ))
        }
        Err(e) => return Err(refuse(RefusalCode::Unreachable, format!("the database: {e}"))),
    };
    let identity = oidc.finish(&attempt, query.code.as_deref().unwrap_or_default()).await.map_err(|r| (r, None))?;
    let who = Some(identity.preferred_username.clone().or(identity.email.clone()).unwrap_or(identity.subject.clone()));
    let rules = admit_rules(oidc);
    let admitted = admit(&state.store, &rules, &identity).await.map_err(|r| (r, who))?;
    Ok((admitted, attempt.return_to, identity.id_token))
}

fn admit_rules(oidc: &Oidc) -> AdmitRules<'_> {
    AdmitRules { roles: &oidc.settings().roles, link_local_users: oidc.settings().link_local_users }
}

fn session_secs(state: &AppState, oidc: &Oidc) -> u64 {
    state.tokens.ttl_secs.min(oidc.settings().session_secs)
}

/// Refusals go back to the sign-in page, which says why in words; never elsewhere.
fn to_sign_in_page(code: RefusalCode) -> impl IntoResponse {
    (NO_STORE, Redirect::to(&format!("/login?error={}", code.as_str())))
}

fn audit_admitted(state: &AppState, admitted: &Admitted, action: &str, status: i32) {
    let role = admitted.principal.role;
    let how = if admitted.linked { " (a local user linked to the provider)" } else { "" };
    let detail = format!("signed in through single sign-on as {role} by `{}`{how}", admitted.rule);
    record(state, Actor::from(&admitted.principal), action, Some(admitted.user.id.to_string()), status, detail);
    audit_role_change(state, admitted);
}

/// The mapping gave a role other than the user had: said apart from the sign-in, so a
/// search of the log for role changes finds it.
fn audit_role_change(state: &AppState, admitted: &Admitted) {
    let Some(was) = admitted.role_was else { return };
    let detail = format!("role {was} → {} by the group mapping (`{}`)", admitted.principal.role, admitted.rule);
    let target = Some(admitted.user.id.to_string());
    record(state, Actor::from(&admitted.principal), "SSO role mapping", target, 200, detail);
}

fn audit_refused(state: &AppState, refused: &Refused, who: Option<&str>) {
    tracing::info!(code = refused.code.as_str(), reason = %refused.reason, "single sign-on refused");
    let actor = who.map_or_else(Actor::anonymous, Actor::signing_in);
    let detail = format!("single sign-on refused ({}): {}", refused.code.as_str(), refused.reason);
    record(state, actor, CALLBACK_ROUTE, None, 403, detail);
}

fn record(state: &AppState, actor: Actor, action: &str, target: Option<String>, status: i32, detail: String) {
    state.audit.record(AuditRow {
        id: Uuid::now_v7(),
        at: chrono::Utc::now(),
        actor_id: actor.id,
        actor_name: actor.name,
        actor_role: actor.role,
        action: action.to_owned(),
        target,
        status,
        detail: Some(detail),
        request_id: None,
    });
}

#[utoipa::path(
    post,
    path = "/auth/oidc/mapping/preview",
    operation_id = "previewRoleMapping",
    tag = "auth",
    request_body = MappingPreviewRequest,
    responses(
        (status = 200, description = "The role these groups would get, and the rule that gives it", body = MappingPreview),
        (status = 404, description = "Single sign-on is not configured", body = Problem),
    )
)]
async fn mapping_preview(
    State(state): State<AppState>,
    _: Authed<AsAdmin>,
    ApiJson(body): ApiJson<MappingPreviewRequest>,
) -> ApiResult<Json<MappingPreview>> {
    let oidc = configured(&state)?;
    let decision = oidc.settings().roles.decide(&body.groups);
    Ok(Json(MappingPreview { role: decision.role, rule: decision.rule, explanation: decision.explanation }))
}

/// What the command line shows the person, and polls with.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
struct DeviceStarted {
    device_code: String,
    user_code: String,
    verification_uri: String,
    verification_uri_complete: Option<String>,
    expires_in: u64,
    /// Seconds between polls.
    interval: u64,
}

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
async fn device_start(State(state): State<AppState>) -> ApiResult<Json<DeviceStarted>> {
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
struct DevicePending {
    pending: bool,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct DeviceTokenRequest {
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
async fn device_token(
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
