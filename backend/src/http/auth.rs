//! Sign-in, sign-out, "who am I", and the extractor that authorizes every other route.

use super::error::{ApiError, ApiResult};
use super::extract::ApiJson;
use super::sign_in::{Attempt, ClientAddr, Refusal};
use super::AppState;
use crate::audit::{Actor, AuditSlot};
use crate::auth::jwt::TokenSession;
use crate::auth::{api_key, password, Principal, Role};
use axum::extract::{FromRequestParts, State};
use axum::http::header::{self, HeaderName, AUTHORIZATION};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use std::marker::PhantomData;
use trellis_model::api::{LoginRequest, Me, Problem, TokenResponse};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

pub const SESSION_COOKIE: &str = "trellis_session";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(login)).routes(routes!(logout)).routes(routes!(me))
}

#[utoipa::path(
    post,
    path = "/auth/login",
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
    let user = state.store.user_by_name(&username).await?;
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
    let now = chrono::Utc::now();
    let sid = Uuid::new_v4();
    let ttl = chrono::Duration::seconds(i64::try_from(state.tokens.ttl_secs).unwrap_or(i64::MAX / 1000));
    state.store.insert_session(sid, user.id, now, now + ttl).await?;
    let token = state.tokens.issue(&principal, sid, now.timestamp() as u64);
    let cookie = Cookie::build((SESSION_COOKIE, token.clone()))
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.serve.secure_cookies)
        .path("/")
        .max_age(time_secs(state.tokens.ttl_secs));
    let body = TokenResponse { access_token: token, token_type: "Bearer".into(), expires_in: state.tokens.ttl_secs };
    Ok((NO_STORE, jar.add(cookie), Json(body)))
}

/// Auth answers carry credentials or who the caller is: never kept by any cache.
pub const NO_STORE: [(HeaderName, &str); 1] = [(header::CACHE_CONTROL, "no-store")];

fn time_secs(secs: u64) -> cookie::time::Duration {
    cookie::time::Duration::seconds(secs as i64)
}

/// Ends the caller's session server-side (the token stops working everywhere, not only in
/// this browser) and clears the session cookie. Without a valid session it only clears the
/// cookie.
#[utoipa::path(
    post,
    path = "/auth/logout",
    tag = "auth",
    security(()),
    responses((status = 204, description = "The session is ended and the session cookie cleared"))
)]
async fn logout(State(state): State<AppState>, jar: CookieJar, headers: HeaderMap) -> ApiResult<impl IntoResponse> {
    // With an `Authorization` header, only it counts: never the cookie behind it.
    let token = match headers.contains_key(AUTHORIZATION) {
        true => bearer(&headers).ok().flatten(),
        false => jar.get(SESSION_COOKIE).map(|c| c.value().to_owned()),
    };
    if let Some(session) = token.and_then(|t| state.tokens.verify(&t).ok()) {
        state.store.delete_session(session.session_id).await?;
    }
    Ok((NO_STORE, jar.remove(Cookie::build(SESSION_COOKIE).path("/")), StatusCode::NO_CONTENT))
}

#[utoipa::path(
    get,
    path = "/auth/me",
    tag = "auth",
    responses((status = 200, description = "The caller", body = Me))
)]
async fn me(auth: Authed<AsViewer>) -> impl IntoResponse {
    let p = auth.principal;
    (NO_STORE, Json(Me { id: p.id, username: p.name, role: p.role.to_string() }))
}

/// A minimum role, as a type, so each handler states what it needs in its signature.
pub trait MinRole: Send + Sync + 'static {
    const ROLE: Role;
}

macro_rules! min_role {
    ($($marker:ident => $role:ident),*) => {$(
        #[derive(Debug)]
        pub struct $marker;
        impl MinRole for $marker {
            const ROLE: Role = Role::$role;
        }
    )*};
}
min_role!(AsViewer => Viewer, AsOperator => Operator, AsEditor => Editor, AsAdmin => Admin);

/// An authenticated caller holding at least role `R`: 401 without valid credentials,
/// 403 with too low a role.
#[derive(Debug)]
pub struct Authed<R> {
    pub principal: Principal,
    _role: PhantomData<R>,
}

impl<R: MinRole> FromRequestParts<AppState> for Authed<R> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let principal = authenticate(parts, state).await?;
        // The audit middleware reads the caller from here after the handler (403s included).
        if let Some(slot) = parts.extensions.get::<AuditSlot>() {
            slot.set(Actor::from(&principal));
        }
        if principal.role < R::ROLE {
            return Err(ApiError::Forbidden(format!("this needs the {} role; you are {}", R::ROLE, principal.role)));
        }
        Ok(Authed { principal, _role: PhantomData })
    }
}

async fn authenticate(parts: &Parts, state: &AppState) -> ApiResult<Principal> {
    authenticate_headers(&parts.headers, state).await
}

async fn authenticate_headers(headers: &HeaderMap, state: &AppState) -> ApiResult<Principal> {
    let Some(token) = bearer(headers)? else {
        let jar = CookieJar::from_headers(headers);
        let Some(cookie) = jar.get(SESSION_COOKIE) else {
            return Err(ApiError::Unauthorized("sign in, or send `Authorization: Bearer <token>`".into()));
        };
        return session_principal(state, cookie.value()).await;
    };
    if api_key::looks_like_key(&token) {
        let key = state.store.api_key_by_hash(&api_key::hash(&token)).await?;
        let key = key.ok_or_else(|| ApiError::Unauthorized("unknown or revoked API key".into()))?;
        let role = key.role.parse().map_err(|e: String| ApiError::Internal(anyhow::anyhow!(e)))?;
        Ok(Principal { id: key.id.to_string(), name: format!("key:{}", key.name), role })
    } else {
        session_principal(state, &token).await
    }
}

/// The bearer credential, if the request has an `Authorization` header.
pub fn bearer(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let Some(value) = headers.get(AUTHORIZATION) else {
        return Ok(None);
    };
    let value = value.to_str().unwrap_or_default();
    let token = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer "));
    let token = token
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::Unauthorized("the Authorization header must be `Bearer <token or API key>`".into()))?;
    Ok(Some(token.to_owned()))
}

/// The caller a token speaks for, as the users table has it now: the signature names a
/// session, and the session must still exist (not signed out, no password change since,
/// user not deleted). The role is the user's current one, never the one signed into the token.
async fn session_principal(state: &AppState, token: &str) -> ApiResult<Principal> {
    let claimed = verify_jwt(state, token)?;
    let user = state.store.session_user(claimed.session_id, chrono::Utc::now()).await?;
    let Some(user) = user.filter(|u| u.user_id == claimed.user_id) else {
        return Err(ApiError::Unauthorized(
            "this session has ended (signed out, password changed, or the user was removed); sign in again".into(),
        ));
    };
    let role = user.role.parse().map_err(|e: String| ApiError::Internal(anyhow::anyhow!(e)))?;
    Ok(Principal { id: user.user_id.to_string(), name: user.username, role })
}

fn verify_jwt(state: &AppState, token: &str) -> ApiResult<TokenSession> {
    state.tokens.verify(token).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind;
        let why = match e.kind() {
            ErrorKind::ExpiredSignature => "the token has expired; sign in again",
            _ => "the token is not valid",
        };
        ApiError::Unauthorized(why.into())
    })
}

/// For answers that outlive their request (event streams): rechecks, at most every
/// `TRELLIS_SSE_REAUTH_MS`, that the credential the stream was opened with still speaks for
/// someone with the role, so a signed-out, demoted or deleted user's streams end too.
pub struct StillAuthed {
    state: AppState,
    credential: HeaderMap,
    role: Role,
    every: std::time::Duration,
    checked: std::time::Instant,
}

impl StillAuthed {
    pub fn new<R: MinRole>(state: &AppState, headers: &HeaderMap) -> StillAuthed {
        let mut credential = HeaderMap::new();
        for name in [AUTHORIZATION, header::COOKIE] {
            for value in headers.get_all(&name) {
                credential.append(name.clone(), value.clone());
            }
        }
        let every = std::time::Duration::from_millis(state.serve.sse_reauth_ms.max(100));
        StillAuthed { state: state.clone(), credential, role: R::ROLE, every, checked: std::time::Instant::now() }
    }

    /// When the next check is due.
    pub fn due(&self) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.checked + self.every)
    }

    /// Whether the credential still holds; checks the store only when a check is due. A
    /// database that is away is not a revocation: the stream goes on.
    pub async fn holds(&mut self) -> bool {
        if self.checked.elapsed() < self.every {
            return true;
        }
        self.checked = std::time::Instant::now();
        match authenticate_headers(&self.credential, &self.state).await {
            Ok(principal) => principal.role >= self.role,
            Err(ApiError::Unauthorized(_)) => false,
            Err(_) => true,
        }
    }
}
