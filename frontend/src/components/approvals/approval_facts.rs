//! The question and where it stands: its title and status, its description, the run and node
//! that ask it, how it closed (once it has), who may decide, how many approvals close it, and
//! when it times out.

use crate::approvals::{ago, closing, due_in, status_words, who_may_decide};
use crate::components::run::state::browser_now;
use crate::format;
use crate::urls;
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use trellis_model::api::Approval;

/// An instant as people read it, exact on hover.
fn when(at: &DateTime<Utc>, words: String) -> impl IntoView {
    let exact = format::rfc3339(at);
    view! { <time datetime=exact.clone() title=exact>{words}</time> }
}

#[component]
pub fn ApprovalFacts(approval: Approval) -> impl IntoView {
    let a = approval;
    let now = browser_now();
    let status = a.status.as_str();
    let closed = a.closed_at.filter(|_| !a.status.is_open()).map(|at| {
        view! {
            <p class=format!("approval-closed approval-{status}") data-testid="approval-closed">
                {closing(&a)} " · " {when(&at, format::timestamp(&at))}
            </p>
        }
    });
    let required = match a.required {
        1 => "One approval closes it; a rejection closes it at once.".to_owned(),
        n => format!("{n} approvals close it; a rejection closes it at once."),
    };
    let due = match (&a.due_at, a.status.is_open()) {
        (Some(due), true) => {
            view! { {when(due, format::timestamp(due))} {format!(" ({})", due_in(due, now))} }.into_any()
        }
        (Some(due), false) => when(due, format::timestamp(due)).into_any(),
        (None, _) => "No time limit".into_any(),
    };
    let starter = match (&a.started_by, a.allow_starter) {
        (Some(who), false) => Some(format!("{who} started the run and may not decide it.")),
        (Some(who), true) => Some(format!("{who} started the run, and may decide it too.")),
        (None, _) => None,
    };
    view! {
        <header class="approval-head">
            <h1 data-testid="approval-title">{a.title.clone()}</h1>
            <strong class=format!("approval-status approval-{status}") data-testid="approval-status">{status_words(a.status)}</strong>
        </header>
        {a.description.clone().map(|d| view! { <p class="approval-description" data-testid="approval-description">{d}</p> })}
        <p class="run-meta muted">
            <a href=urls::instance_page(&a.instance_id.to_string()) data-testid="approval-workflow">{a.workflow_name.clone()}</a>
            " · node " <code>{a.node.clone()}</code>
            " · requested " {when(&a.created_at, ago(&a.created_at, now))}
        </p>
        {closed}
        <dl class="approval-facts">
            <dt>"Who may decide"</dt>
            <dd data-testid="approval-assignees">
                <ul class="assignees">{who_may_decide(&a.assignees).into_iter().map(|w| view! { <li>{w}</li> }).collect_view()}</ul>
                {starter.map(|s| view! { <span class="muted">{s}</span> })}
            </dd>
            <dt>"Required"</dt>
            <dd data-testid="approval-required">{required}</dd>
            <dt>"Due"</dt>
            <dd data-testid="approval-due">{due}</dd>
        </dl>
    }
}
