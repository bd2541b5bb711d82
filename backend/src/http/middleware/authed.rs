//! The extractor that authorizes every route ([`Authed`]), and the recheck that keeps
//! long-lived answers honest ([`StillAuthed`]). Signing in and out is `resources::session`.

use crate::audit::{Actor, AuditSlot};
use crate::auth::jwt::TokenSession;
use crate::auth::{api_key, Principal, Role};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::AppState;
use axum::extract::FromRequestParts;
use axum::http::header::{self, AUTHORIZATION};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum_extra::extract::cookie::CookieJar;
use std::marker::PhantomData;

/// The session cookie sign-in sets and every request may authenticate with.
pub const SESSION_COOKIE: &str = "trellis_session";

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
        Ok(Principal { id: key.id.to_string(), name: format!("key:{}", key.name), role: key.role })
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
    Ok(Principal { id: user.user_id.to_string(), name: user.username, role: user.role })
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
