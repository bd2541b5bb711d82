//! Sign-in, sign-out and "who am I". What sign-in checks around the password (address,
//! throttles, hashing gate) is `sign_in`; the extractor that authorizes every other route is
//! `middleware::authed`.

use super::sign_in::{Attempt, ClientAddr, Refusal};
use crate::audit::{Actor, AuditSlot};
use crate::auth::{password, Principal};
use crate::http::middleware::authed::{bearer, AsViewer, Authed, SESSION_COOKIE};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::ApiJson;
use crate::http::AppState;
use crate::store::NewSession;
use axum::extract::State;
use axum::http::header::{self, HeaderName, AUTHORIZATION};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use trellis_model::api::{LoginRequest, Me, Problem, SignedOut, TokenResponse};
use trellis_model::UserSource;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(login)).routes(routes!(logout)).routes(routes!(me))
}

#[utoipa::path(
    post,
    path = "/auth/login",
    operation_id = "signIn",
    tag = "auth",
    request_body = LoginRequest,
    security(()),
    responses(
        (
            status = 200,
            description = "Signed in; the same token is also set as the HttpOnly session cookie",
            body = TokenResponse
        ),
        (status = 401, description = "Wrong username or password", body = Problem),
        (
            status = 429,
            description = "Too many failed sign-ins for this username or address; `Retry-After` says when to try again",
            body = Problem
        ),
        (status = 503, description = "Too many sign-ins at once; retry after `Retry-After` seconds", body = Problem),
    )
)]
async fn login(
    State(state): State<AppState>,
    audit: AuditSlot,
    ClientAddr(addr): ClientAddr,
    jar: CookieJar,
    ApiJson(body): ApiJson<LoginRequest>,
) -> Result<impl IntoResponse, Refusal> {
    // Usernames never contain NUL, and Postgres would refuse it as a parameter.
    let username = body.username.replace('\0', "");
    // Audited as the username tried (throttled attempts too); the password is never recorded.
    audit.set(Actor::signing_in(&username));
    if !state.serve.password_login {
        return Err(ApiError::Forbidden(
            "signing in with a password is turned off here (TRELLIS_PASSWORD_LOGIN=false); sign in through single sign-on"
                .into(),
        )
        .into());
    }
    let attempt = Attempt::new(&username, addr);
    attempt.check(&state.sign_in)?;
    if !attempt.names_possible_account() {
        // No account can have this name: refused without a hash (its length is the caller's).
        attempt.failed(&state.sign_in);
        return Err(ApiError::Unauthorized("wrong username or password".into()).into());
    }
    let turn = password::turn().await?;
    // Checked again: while this attempt waited for its turn, others may have locked the key.
    attempt.check(&state.sign_in)?;
    // A single sign-on user has no password: checked against none (the same time as an
    // unknown name), so the answer does not tell them apart.
    let user = state.store.user_by_name(&username).await?.filter(|u| u.source == UserSource::Local);
    let matches = password::verify(turn, body.password, user.as_ref().map(|u| u.password_hash.clone())).await?;
    let Some(user) = user.filter(|_| matches) else {
        tracing::info!(%username, "sign-in refused");
        attempt.failed(&state.sign_in);
        return Err(ApiError::Unauthorized("wrong username or password".into()).into());
    };
    attempt.succeeded(&state.sign_in);
    // Said only to who knows the password: it does not tell others the account exists.
    if user.disabled_at.is_some() {
        tracing::info!(%username, "sign-in refused: the account is disabled");
        return Err(ApiError::Forbidden("this account is disabled; an admin can enable it again".into()).into());
    }
    let principal = Principal { id: user.id.to_string(), name: user.username.clone(), role: user.role };
    audit.set(Actor::from(&principal));
    let (body, cookie) = open_session(&state, &principal, state.tokens.ttl_secs, None).await?;
    Ok((NO_STORE, jar.add(cookie), Json(body)))
}

/// Records a session of `principal` lasting `ttl_secs` and answers its token, as a body and
/// as the session cookie. A single sign-on session keeps the provider's `id_token`.
pub async fn open_session(
    state: &AppState,
    principal: &Principal,
    ttl_secs: u64,
    id_token: Option<&str>,
) -> ApiResult<(TokenResponse, Cookie<'static>)> {
    let user: Uuid =
        principal.id.parse().map_err(|_| ApiError::Internal(anyhow::anyhow!("a user id that is no UUID")))?;
    let now = chrono::Utc::now();
    let id = Uuid::new_v4();
    let expires_at = now + chrono::Duration::seconds(i64::try_from(ttl_secs).unwrap_or(i64::MAX / 1000));
    state.store.insert_session(&NewSession { id, user, now, expires_at, id_token }).await?;
    let token = state.tokens.issue_for(principal, id, now.timestamp() as u64, ttl_secs);
    let cookie = Cookie::build((SESSION_COOKIE, token.clone()))
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.serve.secure_cookies)
        .path("/")
        .max_age(time_secs(ttl_secs))
        .build();
    Ok((TokenResponse { access_token: token, token_type: "Bearer".into(), expires_in: ttl_secs }, cookie))
}

/// Auth answers carry credentials or who the caller is: never kept by any cache.
pub const NO_STORE: [(HeaderName, &str); 1] = [(header::CACHE_CONTROL, "no-store")];

fn time_secs(secs: u64) -> cookie::time::Duration {
    cookie::time::Duration::seconds(secs as i64)
}

/// Ends the caller's session server-side (the token stops working everywhere, not only in
/// this browser) and clears the session cookie. Without a valid session it only clears the
/// cookie. A single sign-on session answers where the browser goes to sign out at the
/// provider too.
#[utoipa::path(
    post,
    path = "/auth/logout",
    operation_id = "signOut",
    tag = "auth",
    security(()),
    responses(
        (status = 200, description = "A single sign-on session is ended: `end_session_url` signs out at the provider", body = SignedOut),
        (status = 204, description = "The session is ended and the session cookie cleared"),
    )
)]
async fn logout(
    State(state): State<AppState>,
    audit: AuditSlot,
    jar: CookieJar,
    headers: HeaderMap,
) -> ApiResult<axum::response::Response> {
    // With an `Authorization` header, only it counts: never the cookie behind it.
    let token = match headers.contains_key(AUTHORIZATION) {
        true => bearer(&headers).ok().flatten(),
        false => jar.get(SESSION_COOKIE).map(|c| c.value().to_owned()),
    };
    let mut id_token = None;
    if let Some(session) = token.and_then(|t| state.tokens.verify(&t).ok()) {
        if let Some(user) = state.store.session_user(session.session_id, chrono::Utc::now()).await? {
            audit.set(Actor { id: Some(user.user_id.to_string()), name: user.username, role: Some(user.role) });
        }
        id_token = state.store.session_id_token(session.session_id).await?;
        state.store.delete_session(session.session_id).await?;
    }
    let jar = jar.remove(Cookie::build(SESSION_COOKIE).path("/"));
    let end_session_url = match (id_token, state.oidc.as_ref()) {
        (Some(id_token), Some(oidc)) => oidc.provider.end_session_url(&id_token).await,
        _ => None,
    };
    Ok(match end_session_url {
        Some(url) => (NO_STORE, jar, Json(SignedOut { end_session_url: Some(url) })).into_response(),
        None => (NO_STORE, jar, StatusCode::NO_CONTENT).into_response(),
    })
}

#[utoipa::path(
    get,
    path = "/auth/me",
    operation_id = "showCurrentUser",
    tag = "auth",
    responses((status = 200, description = "The caller", body = Me))
)]
async fn me(auth: Authed<AsViewer>) -> impl IntoResponse {
    let p = auth.principal;
    (NO_STORE, Json(Me { id: p.id, username: p.name, role: p.role }))
}
