//! The instance's header: its workflow and version, the live status (from the history as it
//! arrives), timestamps, error, and the actions that apply.

use crate::components::run::failure_links::FailureLinks;
use crate::components::run::queue_explain::QueueExplain;
use crate::components::run::run_actions::RunActions;
use crate::components::run::state::RunView;
use crate::format;
use crate::run::family::started_by;
use crate::urls;
use leptos::prelude::*;

#[component]
pub fn InstanceHeader() -> impl IntoView {
    let v = expect_context::<RunView>();
    // The history is newer than the last read of the instance, when it has said anything.
    let status = Memo::new(move |_| {
        v.run
            .with(|r| r.status.clone())
            .or_else(|| v.detail.with(|d| d.as_ref().map(|d| d.summary.status.to_string())))
            .unwrap_or_default()
    });
    let error = move || {
        v.run.with(|r| r.error.clone()).or_else(|| v.detail.with(|d| d.as_ref().and_then(|d| d.summary.error.clone())))
    };
    let when = |label: &'static str, at: Option<chrono::DateTime<chrono::Utc>>| {
        at.map(|at| {
            view! {
                <span>{label} " " <time datetime=format::rfc3339(&at) title=format::rfc3339(&at)>{format::timestamp(&at)}</time></span>
            }
        })
    };
    view! {
        <header class="run-header">
            <div class="run-title">
                <h1>"Instance " <code>{v.id.get_value()}</code></h1>
                <strong data-testid="instance-status" class=move || format!("status run-{}", status.get()) aria-live="polite">
                    {move || status.get().replace('_', " ")}
                </strong>
            </div>
            {move || v.detail.get().map(|d| {
                let concurrency_key = d.concurrency_key.map(|k| format!(" · concurrency key {k}"));
                let s = d.summary;
                view! {
                    <p class="run-meta muted">
                        <a href=urls::designer_page(&s.workflow_id) data-testid="instance-workflow">{s.workflow_name.clone().unwrap_or_else(|| "Workflow".to_owned())}</a>
                        {format!(" · version {}", s.version)}
                        {s.key.map(|k| format!(" · key {k}"))}
                        <span data-testid="instance-concurrency-key">{concurrency_key}</span>
                        " · " {when("created", Some(s.created_at))}
                        {s.started_at.map(|_| " · ")} {when("started", s.started_at)}
                        {s.ended_at.map(|_| " · ")} {when("ended", s.ended_at)}
                    </p>
                }
            })}
            {move || v.detail.get().and_then(|d| d.parent).map(|p| {
                let (link, node) = started_by(&p);
                view! {
                    <p class="run-parent" data-testid="instance-parent">
                        "Started by " <a href=link.href data-testid="parent-link">{link.text}</a> " / node " <code>{node}</code>
                    </p>
                }
            })}
            <FailureLinks />
            {move || error().map(|e| view! { <p class="alert" role="alert" data-testid="instance-error">{e}</p> })}
            <QueueExplain status=status.into() />
            <RunActions status=status.into() />
        </header>
    }
}
