//! Sign-in, sign-out, "who am I", and the extractor that authorizes every other route.

use super::error::{ApiError, ApiResult};
use super::extract::ApiJson;
use super::AppState;
use crate::audit::{Actor, AuditSlot};
use crate::auth::{api_key, password, Principal, Role};
use axum::extract::{FromRequestParts, State};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use utoipa_axum::{router::OpenApiRouter, routes};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use std::marker::PhantomData;
use trellis_model::api::{LoginRequest, Me, Problem, TokenResponse};

pub const SESSION_COOKIE: &str = "trellis_session";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(login)).routes(routes!(logout)).routes(routes!(me))
}

#[utoipa::path(post, path = "/auth/login", tag = "auth", request_body = LoginRequest, security(()), responses((status = 200, description = "Signed in; the same token is also set as the HttpOnly session cookie", body = TokenResponse), (status = 401, description = "Wrong username or password", body = Problem, content_type = "application/problem+json")))]
async fn login(
    State(state): State<AppState>,
    audit: AuditSlot,
    jar: CookieJar,
    ApiJson(body): ApiJson<LoginRequest>,
) -> ApiResult<impl IntoResponse> {
    // Usernames never contain NUL, and Postgres would refuse it as a parameter.
    let username = body.username.replace('\0', "");
    // Audited as the username tried; the password is never recorded.
    audit.set(Actor::signing_in(&username));
    let user = state.store.user_by_name(&username).await?;
    let matches = password::verify(body.password, user.as_ref().map(|u| u.password_hash.clone())).await?;
    let Some(user) = user.filter(|_| matches) else {
        tracing::info!(username = %body.username, "sign-in refused");
        return Err(ApiError::Unauthorized("wrong username or password".into()));
    };
    let principal = Principal { id: user.id.to_string(), name: user.username.clone(), role: user.role() };
    audit.set(Actor::from(&principal));
    let token = state.tokens.issue(&principal, chrono::Utc::now().timestamp() as u64);
    let cookie = Cookie::build((SESSION_COOKIE, token.clone()))
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.serve.secure_cookies)
        .path("/")
        .max_age(time_secs(state.tokens.ttl_secs));
    let body = TokenResponse { access_token: token, token_type: "Bearer".into(), expires_in: state.tokens.ttl_secs };
    Ok((jar.add(cookie), Json(body)))
}

fn time_secs(secs: u64) -> cookie::time::Duration {
    cookie::time::Duration::seconds(secs as i64)
}

/// Clears the session cookie. Tokens are stateless, so a copied token stays valid until
/// it expires; keep the lifetime short where that matters.
#[utoipa::path(post, path = "/auth/logout", tag = "auth", security(()), responses((status = 204, description = "The session cookie is cleared")))]
async fn logout(jar: CookieJar) -> impl IntoResponse {
    (jar.remove(Cookie::build(SESSION_COOKIE).path("/")), StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/auth/me", tag = "auth", responses((status = 200, description = "The caller", body = Me)))]
async fn me(auth: Authed<AsViewer>) -> Json<Me> {
    let p = auth.principal;
    Json(Me { id: p.id, username: p.name, role: p.role.to_string() })
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
            return Err(ApiError::Forbidden(format!(
                "this needs the {} role; you are {}",
                R::ROLE,
                principal.role
            )));
        }
        Ok(Authed { principal, _role: PhantomData })
    }
}

async fn authenticate(parts: &Parts, state: &AppState) -> ApiResult<Principal> {
    let token = match parts.headers.get(AUTHORIZATION) {
        Some(value) => {
            let value = value.to_str().unwrap_or_default();
            let token = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer "));
            token.map(str::trim).filter(|t| !t.is_empty()).ok_or_else(|| {
                ApiError::Unauthorized("the Authorization header must be `Bearer <token or API key>`".into())
            })?
        }
        None => {
            let jar = CookieJar::from_headers(&parts.headers);
            let Some(cookie) = jar.get(SESSION_COOKIE) else {
                return Err(ApiError::Unauthorized("sign in, or send `Authorization: Bearer <token>`".into()));
            };
            return verify_jwt(state, cookie.value());
        }
    };
    if api_key::looks_like_key(token) {
        let key = state.store.api_key_by_hash(&api_key::hash(token)).await?;
        let key = key.ok_or_else(|| ApiError::Unauthorized("unknown or revoked API key".into()))?;
        let role = key.role.parse().map_err(|e: String| ApiError::Internal(anyhow::anyhow!(e)))?;
        Ok(Principal { id: key.id.to_string(), name: format!("key:{}", key.name), role })
    } else {
        verify_jwt(state, token)
    }
}

fn verify_jwt(state: &AppState, token: &str) -> ApiResult<Principal> {
    state.tokens.verify(token).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind;
        let why = match e.kind() {
            ErrorKind::ExpiredSignature => "the token has expired; sign in again",
            _ => "the token is not valid",
        };
        ApiError::Unauthorized(why.into())
    })
}
