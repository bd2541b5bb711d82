//! Single sign-on's audit trail: every sign-in, refusal (with its reason) and role change
//! the group mapping made.

use crate::audit::Actor;
use crate::auth::oidc::{Admitted, Refused};
use crate::http::AppState;
use crate::store::AuditRow;
use uuid::Uuid;

pub(super) const CALLBACK_ROUTE: &str = "GET /api/v1/auth/oidc/callback";

pub(super) fn audit_admitted(state: &AppState, admitted: &Admitted, action: &str, status: i32) {
    let role = admitted.principal.role;
    let how = if admitted.linked { " (a local user linked to the provider)" } else { "" };
    let detail = format!("signed in through single sign-on as {role} by `{}`{how}", admitted.rule);
    record(state, Actor::from(&admitted.principal), action, Some(admitted.user.id.to_string()), status, detail);
    audit_role_change(state, admitted);
}

/// The mapping gave a role other than the user had: said apart from the sign-in, so a
/// search of the log for role changes finds it.
pub(super) fn audit_role_change(state: &AppState, admitted: &Admitted) {
    let Some(was) = admitted.role_was else { return };
    let detail = format!("role {was} → {} by the group mapping (`{}`)", admitted.principal.role, admitted.rule);
    let target = Some(admitted.user.id.to_string());
    record(state, Actor::from(&admitted.principal), "SSO role mapping", target, 200, detail);
}

pub(super) fn audit_refused(state: &AppState, refused: &Refused, who: Option<&str>) {
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
