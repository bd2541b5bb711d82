//! The command line's sign-in through the browser (`crate::auth::oidc::loopback`): the
//! callback hands a one-time code to the command line's loopback port, and the command line
//! trades it, with the PKCE verifier only it holds, for a session here.
//!
//! The hand-off is a link the person follows, not a redirect: whoever began the attempt holds
//! its verifier, so a sign-in link someone else sent (to a browser already signed in at the
//! provider, which asks nothing) must not carry the code anywhere by itself. The page names the
//! account and says to continue only after running `trellis login --sso`.

use super::{configured, session_secs};
use crate::audit::{Actor, AuditSlot};
use crate::auth::oidc::loopback::{code_hash, new_handoff, verifier_fits, LoopbackReturn};
use crate::auth::oidc::Admitted;
use crate::auth::Principal;
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::ApiJson;
use crate::http::resources::session::{open_session, NO_STORE};
use crate::http::resources::spa::html_escape;
use crate::http::AppState;
use axum::extract::State;
use axum::response::{Html, IntoResponse};
use axum::Json;
use trellis_model::api::{LoopbackTokenRequest, Problem, TokenResponse};

/// Records the admitted user's one-time code and answers the page that asks the person to
/// confirm before the code goes to the loopback port.
pub(super) async fn hand_off(
    state: &AppState,
    cli: &LoopbackReturn,
    admitted: &Admitted,
    id_token: &str,
) -> ApiResult<Html<String>> {
    let now = chrono::Utc::now();
    let (code, handoff) = new_handoff(cli, admitted.user.id, id_token, now);
    state.store.insert_oidc_handoff(&handoff, now).await?;
    let who = html_escape(&admitted.principal.name);
    let role = admitted.principal.role;
    Ok(Html(format!(
        "<!doctype html><html lang=en><meta charset=utf-8><title>Sign in the command line — Trellis</title>\
         <h1>Sign in the command line?</h1>\
         <p>A command line on this computer asks to sign in to Trellis as <strong>{who}</strong> ({role}).</p>\
         <p>Continue only if you just ran <code>trellis login --sso</code> yourself.</p>\
         <p><a href=\"{}\" data-testid=continue>Continue</a> &middot; <a href=\"/\">Cancel</a></p>",
        cli.with_code(&code)
    )))
}

#[utoipa::path(
    post,
    path = "/auth/oidc/cli/token",
    operation_id = "finishLoopbackSignOn",
    tag = "auth",
    security(()),
    request_body = LoopbackTokenRequest,
    responses(
        (status = 200, description = "Signed in", body = TokenResponse),
        (status = 400, description = "The body is not a code and a verifier", body = Problem),
        (status = 403, description = "The code is used, expired or unknown, the verifier is not the one that began the sign-in, or the user is disabled", body = Problem),
        (status = 404, description = "Single sign-on is not configured", body = Problem),
    )
)]
pub(super) async fn loopback_token(
    State(state): State<AppState>,
    audit: AuditSlot,
    ApiJson(body): ApiJson<LoopbackTokenRequest>,
) -> ApiResult<impl IntoResponse> {
    let oidc = configured(&state)?.clone();
    if body.code.is_empty() || body.code.len() > 256 || body.code_verifier.len() > 256 {
        return Err(ApiError::BadRequest(
            "`code` is the one the sign-in sent to the loopback port, `code_verifier` the PKCE verifier that began it"
                .into(),
        ));
    }
    let refused = |why: &str| ApiError::Forbidden(format!("single sign-on refused (state): {why}"));
    // Taken before the verifier is checked: a wrong guess spends the code.
    let handoff = state
        .store
        .take_oidc_handoff(&code_hash(&body.code), chrono::Utc::now())
        .await?
        .ok_or_else(|| refused("the code is used, expired or unknown; run `trellis login --sso` again"))?;
    if !verifier_fits(&body.code_verifier, &handoff) {
        return Err(refused("the verifier is not the one that began this sign-in"));
    }
    let user = state.store.user_by_id(handoff.user_id).await?.filter(|u| u.disabled_at.is_none());
    let user = user.ok_or_else(|| refused("the user is gone or disabled"))?;
    let principal = Principal { id: user.id.to_string(), name: user.username.clone(), role: user.role };
    audit.set(Actor::from(&principal));
    let (token, _) = open_session(&state, &principal, session_secs(&state, &oidc), Some(&handoff.id_token)).await?;
    Ok((NO_STORE, Json(token)))
}
