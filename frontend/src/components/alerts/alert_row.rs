//! One alert rule: what it watches and where it posts; "Send test" (a signed delivery now, and
//! how it went), its delivery log opened on demand, and "Delete" — the test and delete only for
//! the rule's creator and admins (`can_manage`; others see only the receiver's host).

use super::delivery_log::DeliveryLog;
use crate::alert_rules::{attempt_outcome, condition, dedupe};
use crate::api_alerts;
use crate::components::mutation::Mutation;
use crate::format;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::{AlertDelivery, AlertRule, AlertTestResult};

/// The columns of a rule's row, for the rows below it that span them all.
pub const COLUMNS: usize = 6;

#[component]
pub fn AlertRow(rule: AlertRule, on_done: Callback<Result<String, String>>) -> impl IntoView {
    let id = StoredValue::new(rule.id.clone());
    let name = StoredValue::new(rule.name.clone());
    let can_manage = rule.can_manage;
    let tested = RwSignal::new(None::<AlertTestResult>);
    let sending = Mutation::new();
    let testing = sending.pending();
    let log = RwSignal::new(None::<Vec<AlertDelivery>>);
    let load_log = move || {
        spawn_local(async move {
            match api_alerts::deliveries(&id.get_value()).await {
                Ok(list) => log.set(Some(list)),
                Err(e) => on_done.run(Err(e.message())),
            }
        })
    };
    let test = move |_| {
        sending.settle(async move { api_alerts::send_test(&id.get_value()).await }, move |said| {
            match said {
                Ok(result) => tested.set(Some(result)),
                Err(e) => on_done.run(Err(e.message())),
            }
            // The test is in the log too: an open log shows it.
            if log.with_untracked(Option::is_some) {
                load_log();
            }
        });
    };
    let deleting = Mutation::new();
    let toggle_log = move |_| match log.with_untracked(Option::is_some) {
        true => log.set(None),
        false => load_log(),
    };
    let delete = move |_| {
        let asked = format!(
            "Delete the alert {}? Nothing more is sent for it, and its delivery log goes too.",
            name.get_value()
        );
        if window().confirm_with_message(&asked).unwrap_or(false) {
            deleting.settle(async move { api_alerts::delete(&id.get_value()).await }, move |said| {
                on_done.run(said.map(|()| format!("Deleted the alert {}.", name.get_value())).map_err(|e| e.message()));
            });
        }
    };
    view! {
        <tr data-testid="alert-row" data-name=rule.name.clone()>
            <td class="name">{rule.name.clone()}</td>
            <td data-testid="alert-condition">{condition(&rule)}
                {dedupe(&rule).map(|d| view! { <span class="hint">{d}</span> })}</td>
            <td>{watched(&rule)}</td>
            <td class="url"><code>{rule.url.clone()}</code></td>
            <td class="updated">{format::timestamp(&rule.created_at)}<span class="hint">{format!("by {}", rule.created_by)}</span></td>
            <td class="actions">
                <Show when=move || can_manage>
                    <button type="button" data-testid="alert-test" on:click=test disabled=move || testing.get()>
                        {move || if testing.get() { "Sending…" } else { "Send test" }}</button>
                </Show>
                <button type="button" data-testid="alert-log" aria-expanded=move || log.with(Option::is_some).to_string()
                    on:click=toggle_log>"Deliveries"</button>
                <Show when=move || can_manage>
                    <button type="button" class="danger" data-testid="alert-delete" on:click=delete>"Delete"</button>
                </Show>
            </td>
        </tr>
        {move || tested.get().map(|t| view! { <tr><td colspan=COLUMNS.to_string()><TestOutcome result=t /></td></tr> })}
        {move || log.get().map(|list| view! { <tr><td colspan=COLUMNS.to_string()><DeliveryLog list=list /></td></tr> })}
    }
}

/// The rule's workflow, linked, or every workflow.
fn watched(rule: &AlertRule) -> AnyView {
    match (&rule.workflow, &rule.workflow_name) {
        (Some(id), name) => {
            let shown = name.clone().unwrap_or_else(|| id.clone());
            view! { <a href=crate::urls::designer_page(id)>{shown}</a> }.into_any()
        }
        (None, _) => view! { <span class="muted">"Every workflow"</span> }.into_any(),
    }
}

#[component]
fn TestOutcome(result: AlertTestResult) -> impl IntoView {
    let outcome = attempt_outcome(&result.attempt);
    let (class, text) = match result.delivered {
        true => ("notice", format!("Test delivered: the receiver answered {outcome}.")),
        false => ("alert", format!("Test not delivered: {outcome}. Check the URL and that the receiver answers 2xx.")),
    };
    view! { <p class=class role="status" data-testid="alert-test-outcome">{text}</p> }
}
