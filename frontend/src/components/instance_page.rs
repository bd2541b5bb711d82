//! `/instances/:id`: an instance's status and its nodes' statuses, polled until it ends.

use crate::api;
use crate::components::app_header::AppHeader;
use crate::components::error_alert::ErrorAlert;
use crate::format;
use crate::urls;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_params_map};
use leptos_router::NavigateOptions;
use std::time::Duration;
use trellis_model::api::InstanceDetail;

const POLL: Duration = Duration::from_millis(1000);

#[component]
pub fn InstancePage() -> impl IntoView {
    let params = use_params_map();
    let id = params.with_untracked(|p| p.get("id").unwrap_or_default());
    let detail = RwSignal::new(None::<InstanceDetail>);
    let error = RwSignal::new(None::<String>);
    let done = RwSignal::new(false);
    let in_flight = RwSignal::new(false);
    let signed_out = RwSignal::new(false);

    let fetch_id = id.clone();
    let tick = move || {
        if done.get_untracked() || in_flight.get_untracked() {
            return;
        }
        in_flight.set(true);
        let id = fetch_id.clone();
        spawn_local(async move {
            match api::get_instance(&id).await {
                Ok(d) => {
                    done.set(d.summary.status.is_terminal());
                    detail.set(Some(d));
                    error.set(None);
                }
                Err(err) => {
                    signed_out.set(err.is_unauthorized());
                    error.set(Some(err.message()));
                }
            }
            in_flight.set(false);
        });
    };
    tick();
    let handle = set_interval_with_handle(tick, POLL).ok();
    on_cleanup(move || {
        if let Some(h) = handle {
            h.clear();
        }
    });

    let me = LocalResource::new(api::me);
    let username = Signal::derive(move || me.get().and_then(Result::ok).map(|me| me.username));
    let navigate = use_navigate();
    Effect::new(move |_| {
        if signed_out.get() {
            navigate("/login", NavigateOptions { replace: true, ..Default::default() });
        }
    });

    let nodes = move || detail.with(|d| d.as_ref().map(|d| d.nodes.clone()).unwrap_or_default());
    view! {
        <AppHeader username=username />
        <main class="page">
            <h1>"Instance " <code>{id.clone()}</code></h1>
            <ErrorAlert message=error />
            {move || detail.get().map(|d| {
                let s = d.summary;
                view! {
                    <p>
                        <a href=urls::designer_page(&s.workflow_id)>"Workflow"</a>
                        {format!(" · version {} · ", s.version)}
                        <strong data-testid="instance-status" class=format!("status {}", s.status)>{s.status.to_string()}</strong>
                        {s.error.map(|e| view! { <span class="alert">{e}</span> })}
                    </p>
                    <p class="muted">{format!("created {}", format::timestamp(&s.created_at))}</p>
                    <h2>"Input"</h2>
                    <pre>{serde_json::to_string_pretty(&d.input).unwrap_or_default()}</pre>
                    {d.output.map(|o| view! { <h2>"Output"</h2><pre data-testid="instance-output">{serde_json::to_string_pretty(&o).unwrap_or_default()}</pre> })}
                }
            })}
            <table class="workflows">
                <thead><tr><th scope="col">"Node"</th><th scope="col">"Status"</th><th scope="col">"Attempts"</th><th scope="col">"Output or error"</th></tr></thead>
                <tbody>
                    {move || nodes().into_iter().map(|n| view! {
                        <tr data-testid=format!("instance-node-{}", n.id)>
                            <td>{n.id.clone()}</td>
                            <td class=format!("status {}", n.status)>{n.status.to_string()}</td>
                            <td>{n.attempts}</td>
                            <td class="output">{n.error.clone().or_else(|| n.output.as_ref().map(|o| o.to_string())).unwrap_or_default()}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </main>
    }
}
