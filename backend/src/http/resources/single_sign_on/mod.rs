//! Single sign-on's routes: how one may sign in (`/auth/providers`), the browser's way
//! through the provider (`/auth/oidc/login` → provider → `/auth/oidc/callback`), the command
//! line's ways (`device.rs`, `loopback.rs`), and the admins' mapping preview. The protocol is
//! `crate::auth::oidc`; this module is its HTTP face, and `audit.rs` its audit trail.

mod audit;
mod device;
mod loopback;

use super::session::{open_session, NO_STORE};
use crate::auth::oidc::admit::{admit, AdmitRules};
use crate::auth::oidc::loopback::LoopbackReturn;
use crate::auth::oidc::settings::LOGIN_PATH;
use crate::auth::oidc::{checked_return_to, Admitted, Oidc, RefusalCode, Refused};
use crate::http::middleware::authed::{AsAdmin, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::{ApiJson, ApiQuery};
use crate::http::AppState;
use crate::store::OidcAttempt;
use audit::{audit_admitted, audit_refused, CALLBACK_ROUTE};
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use serde::Deserialize;
use std::sync::Arc;
use trellis_model::api::{AuthProviders, MappingPreview, MappingPreviewRequest, OidcProvider, Problem};
use utoipa_axum::{router::OpenApiRouter, routes};

/// Keeps an attempt's `state` in the browser that began it, so a callback carrying another
/// browser's state (a forced sign-in) finds no match. `Lax`: it must come back on the
/// provider's top-level redirect.
const STATE_COOKIE: &str = "trellis_oidc_state";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(providers))
        .routes(routes!(login))
        .routes(routes!(callback))
        .routes(routes!(mapping_preview))
        .routes(routes!(device::device_start))
        .routes(routes!(device::device_token))
        .routes(routes!(loopback::loopback_token))
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

pub(super) fn configured(state: &AppState) -> ApiResult<&Arc<Oidc>> {
    state
        .oidc
        .as_ref()
        .ok_or_else(|| ApiError::NotFound("single sign-on is not configured here (TRELLIS_OIDC_ISSUER)".into()))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
struct LoginQuery {
    /// A path on this server to land on after signing in (default `/`).
    return_to: Option<String>,
    /// The command line's sign-in without a device flow: the port it listens on at
    /// 127.0.0.1, where the browser is sent with a one-time code instead of a session.
    cli_port: Option<u16>,
    /// With `cli_port`: the PKCE S256 challenge of the command line's verifier.
    cli_challenge: Option<String>,
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
        (status = 400, description = "`return_to` is not a path on this server, or `cli_port`/`cli_challenge` are not both given and well formed", body = Problem),
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
    let cli =
        LoopbackReturn::from_query(query.cli_port, query.cli_challenge.as_deref()).map_err(ApiError::BadRequest)?;
    match oidc.begin(&state.store, &return_to, cli.as_ref(), chrono::Utc::now()).await {
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
        (status = 200, description = "A command-line attempt signed in: a page naming the account, whose Continue link takes a one-time code to the command's loopback port", body = String, content_type = "text/html"),
        (
            status = 302,
            description = "Signed in: to `return_to` with the session cookie set. Refused: to `/login?error=CODE` (a command-line attempt: its loopback port with `?error=CODE`), nothing set, the reason audited"
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
        Ok((admitted, id_token, attempt)) => {
            audit_admitted(&state, &admitted, CALLBACK_ROUTE, 302);
            if let Some(cli) = cli_return(&attempt) {
                let page = loopback::hand_off(&state, &cli, &admitted, &id_token).await?;
                return Ok((NO_STORE, jar, page).into_response());
            }
            let ttl = session_secs(&state, &oidc);
            let (_, session_cookie) = open_session(&state, &admitted.principal, ttl, Some(&id_token)).await?;
            Ok((NO_STORE, jar.add(session_cookie), Redirect::to(&attempt.return_to)).into_response())
        }
        Err(SignInRefused { refused, who, cli }) => {
            audit_refused(&state, &refused, who.as_deref());
            match cli {
                Some(cli) => {
                    Ok((NO_STORE, jar, Redirect::to(&cli.with_refusal(refused.code.as_str()))).into_response())
                }
                None => Ok((NO_STORE, jar, to_sign_in_page(refused.code)).into_response()),
            }
        }
    }
}

fn cli_return(attempt: &OidcAttempt) -> Option<LoopbackReturn> {
    LoopbackReturn::from_attempt(attempt.cli_port, attempt.cli_challenge.as_deref())
}

/// Who signed in, the provider's ID token, and the attempt it answered.
type SignedIn = (Admitted, String, OidcAttempt);

/// A refused callback: why, who tried (when known), and a command-line attempt's loopback
/// (when the attempt was found), which hears of the refusal instead of the sign-in page.
struct SignInRefused {
    refused: Refused,
    who: Option<String>,
    cli: Option<LoopbackReturn>,
}

impl From<Refused> for SignInRefused {
    fn from(refused: Refused) -> Self {
        SignInRefused { refused, who: None, cli: None }
    }
}

/// The callback's checks in order.
async fn sign_in(
    state: &AppState,
    oidc: &Oidc,
    browser_state: Option<String>,
    query: CallbackQuery,
) -> Result<SignedIn, SignInRefused> {
    let provider_said = query.error.map(|error| {
        let description = query.error_description.unwrap_or_default();
        let said: String = format!("{error} {description}").chars().take(300).collect();
        Refused::new(RefusalCode::Provider, format!("the provider answered: {}", said.trim_end()))
    });
    let attempt = match take_attempt(state, browser_state, query.state).await {
        Ok(attempt) => attempt,
        // A provider's refusal says more than a missing state would.
        Err(refused) => return Err(SignInRefused::from(provider_said.unwrap_or(refused))),
    };
    let cli = cli_return(&attempt);
    if let Some(refused) = provider_said {
        return Err(SignInRefused { refused, who: None, cli });
    }
    let code = query.code.as_deref().unwrap_or_default();
    let identity =
        oidc.finish(&attempt, code).await.map_err(|refused| SignInRefused { refused, who: None, cli: cli.clone() })?;
    let who = Some(identity.preferred_username.clone().or(identity.email.clone()).unwrap_or(identity.subject.clone()));
    let rules = admit_rules(oidc);
    let admitted =
        admit(&state.store, &rules, &identity).await.map_err(|refused| SignInRefused { refused, who, cli })?;
    Ok((admitted, identity.id_token, attempt))
}

/// The attempt the callback's `state` names, if it is this browser's and still waiting.
async fn take_attempt(
    state: &AppState,
    browser_state: Option<String>,
    sent_state: Option<String>,
) -> Result<OidcAttempt, Refused> {
    let refuse = |code, reason: &str| Refused::new(code, reason);
    let Some(sent_state) = sent_state.filter(|s| !s.is_empty() && s.len() <= 256) else {
        return Err(refuse(RefusalCode::State, "the callback carries no state"));
    };
    if browser_state.as_deref() != Some(sent_state.as_str()) {
        return Err(refuse(RefusalCode::State, "the callback's state is not the one this browser began"));
    }
    match state.store.take_oidc_attempt(&sent_state, chrono::Utc::now()).await {
        Ok(Some(attempt)) => Ok(attempt),
        Ok(None) => Err(refuse(RefusalCode::State, "no sign-in is waiting for this state (used, expired or unknown)")),
        Err(e) => Err(Refused::new(RefusalCode::Unreachable, format!("the database: {e}"))),
    }
}

pub(super) fn admit_rules(oidc: &Oidc) -> AdmitRules<'_> {
    AdmitRules { roles: &oidc.settings().roles, link_local_users: oidc.settings().link_local_users }
}

pub(super) fn session_secs(state: &AppState, oidc: &Oidc) -> u64 {
    state.tokens.ttl_secs.min(oidc.settings().session_secs)
}

/// Refusals go back to the sign-in page, which says why in words; never elsewhere.
fn to_sign_in_page(code: RefusalCode) -> impl IntoResponse {
    (NO_STORE, Redirect::to(&format!("/login?error={}", code.as_str())))
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
