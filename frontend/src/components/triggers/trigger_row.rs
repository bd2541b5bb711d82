//! One trigger: where (a webhook's URL) or when (a schedule and its next fire time), paused or
//! active; pause or resume, rotate a webhook's secret (the new one shown once), delete; and
//! its delivery log, newest first, opened on demand.

use crate::api_triggers;
use crate::components::copy_button::CopyButton;
use crate::components::mutation::Mutation;
use crate::components::table_parts::TableHead;
use crate::format;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::{Delivery, Trigger};
use trellis_model::TriggerKind;

/// How long a rotated-out secret still verifies: deliveries already on their way get through.
const ROTATE_GRACE_MS: u64 = 24 * 60 * 60 * 1000;

/// A webhook's URL, a schedule's expression, time zone and next fire time, or a broker's URL
/// and where its messages come from.
pub fn where_or_when(t: &Trigger) -> String {
    let setting = |key: &str| t.settings.get(key).and_then(|v| v.as_str()).map(str::to_owned).unwrap_or_default();
    // A broker's `url` (its setting) reads into the same field as a webhook's.
    let url = t.url.clone().unwrap_or_else(|| setting("url"));
    if t.kind.is_broker() {
        let from = match t.kind {
            TriggerKind::Nats => format!("stream {} · subject {}", setting("stream"), setting("subject")),
            TriggerKind::Amqp => format!("queue {}", setting("queue")),
            _ => format!("topic {}", setting("topic")),
        };
        return format!("{url} · {from}");
    }
    if t.kind == TriggerKind::Webhook {
        return url;
    }
    let next = t.next_fire_at.flatten().map(|n| format!(" · next {}", format::timestamp(&n))).unwrap_or_default();
    format!("{} ({}){next}", setting("expression"), setting("timezone"))
}

#[component]
pub fn TriggerRow(
    t: Trigger,
    on_change: Callback<Result<(), String>>,
    /// Whether the changing actions are offered (editors and admins).
    #[prop(into)]
    editable: Signal<bool>,
) -> impl IntoView {
    let id = StoredValue::new(t.id.clone());
    let paused = t.paused;
    let deliveries = RwSignal::new(None::<Vec<Delivery>>);
    let rotated = RwSignal::new(None::<String>);
    let report = move |outcome: Result<(), crate::error::ApiError>| on_change.run(outcome.map_err(|e| e.message()));
    // One change to this trigger at a time; each reports to the page.
    let changing = Mutation::new();
    let toggle = move |_| {
        changing.settle(async move { api_triggers::set_paused(&id.get_value(), !paused).await.map(drop) }, report)
    };
    let remove = move |_| {
        if window().confirm_with_message("Delete this trigger? Its deliveries stop at once.").unwrap_or(false) {
            changing.settle(async move { api_triggers::delete(&id.get_value()).await }, report);
        }
    };
    let rotate = move |_| {
        changing.settle(async move { api_triggers::rotate(&id.get_value(), ROTATE_GRACE_MS).await }, move |said| {
            match said {
                Ok(r) => rotated.set(Some(r.secret)),
                Err(e) => report(Err(e)),
            }
        })
    };
    let show_log = move |_| {
        if deliveries.with_untracked(Option::is_some) {
            deliveries.set(None);
            return;
        }
        spawn_local(async move {
            match api_triggers::deliveries(&id.get_value()).await {
                Ok(list) => deliveries.set(Some(list)),
                Err(e) => report(Err(e)),
            }
        })
    };
    let is_webhook = t.kind == TriggerKind::Webhook;
    let what = where_or_when(&t);
    let (state, state_class) = state_of(&t);
    view! {
        <tr data-testid="trigger-row" data-kind=t.kind.as_str()>
            <td>{t.kind.as_str()}</td>
            <td class="name">{t.name.clone().unwrap_or_default()}</td>
            <td><code class="wrap">{what}</code></td>
            <td data-testid="trigger-state" class=state_class>{state}</td>
            <td class="actions">
                <Show when=move || editable.get()>
                    <button type="button" data-testid="trigger-toggle" on:click=toggle>{if paused { "Resume" } else { "Pause" }}</button>
                    {is_webhook.then(|| view! { <button type="button" data-testid="trigger-rotate" on:click=rotate>"Rotate secret"</button> })}
                </Show>
                <button type="button" data-testid="trigger-log" on:click=show_log>"Deliveries"</button>
                <Show when=move || editable.get()>
                    <button type="button" class="danger" on:click=remove>"Delete"</button>
                </Show>
            </td>
        </tr>
        {move || rotated.get().map(|secret| view! {
            <tr><td colspan="5">
                <div class="secret-once" role="status">
                    <p><strong>"New secret (the previous one works for 24 hours more): copy it now."</strong></p>
                    <code data-testid="rotated-secret">{secret.clone()}</code> " " <CopyButton text=secret label="Copy secret" />
                </div>
            </td></tr>
        })}
        {move || deliveries.get().map(|list| view! {
            <tr><td colspan="5"><DeliveryLog list=list /></td></tr>
        })}
    }
}

/// "paused" or "active"; for a broker trigger what its consumers report: connected (with
/// its starts in the last minute and the broker's backlog), disconnected and why, paused and
/// why.
pub fn state_of(t: &Trigger) -> (String, &'static str) {
    if t.paused {
        return ("paused".into(), "state-paused");
    }
    let Some(c) = &t.consumer else {
        return (if t.kind.is_broker() { "connecting…" } else { "active" }.into(), "");
    };
    let mut text = c.state.clone();
    if c.state == "connected" {
        text.push_str(&format!(" · {}/min", c.started_last_minute));
        if let Some(lag) = c.lag {
            text.push_str(&format!(" · {lag} waiting"));
        }
    }
    if let Some(why) = &c.reason {
        text.push_str(&format!(": {why}"));
    }
    let class = if c.state == "disconnected" { "state-failed" } else { "" };
    (text, class)
}

const DELIVERY_COLUMNS: &[(&str, &str)] = &[
    ("Received", "updated"),
    ("Outcome", ""),
    ("Verified", ""),
    ("Status", "version"),
    ("Reason", ""),
    ("Instance", ""),
];

#[component]
fn DeliveryLog(list: Vec<Delivery>) -> impl IntoView {
    if list.is_empty() {
        return view! { <p class="muted" data-testid="delivery-empty">"No deliveries yet."</p> }.into_any();
    }
    view! {
        <table class="workflows deliveries" data-testid="delivery-log">
            <TableHead columns=DELIVERY_COLUMNS />
            <tbody>
                {list.into_iter().map(|d| view! {
                    <tr data-testid="delivery-row">
                        <td class="updated">{format::timestamp(&d.received_at)}</td>
                        <td data-testid="delivery-outcome">{d.outcome.as_str()}</td>
                        <td>{match d.verified { Some(true) => "yes", Some(false) => "no", None => "—" }}</td>
                        <td class="version">{d.status.map(|s| s.to_string()).unwrap_or_default()}</td>
                        <td class="error">{d.reason.clone().unwrap_or_default()}</td>
                        <td>{d.instance_id.clone().map(|i| view! { <a href=crate::urls::instance_page(&i)>{i[..8.min(i.len())].to_owned()}</a> })}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
