//! `/retention` (admins): how long finished instances are kept, by default and per workflow.
//! Saving first previews what the policy would delete now (by status and workflow, and the
//! history that goes with them), then asks to confirm. A refused value is named at its field.

use super::policy_form::PolicyForm;
use crate::api;
use crate::api_admin;
use crate::components::error_alert::ErrorAlert;
use crate::components::fetch::load;
use crate::components::mutation::Mutation;
use crate::error::ApiError;
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::{json, Value};
use trellis_model::api::{Retention, RetentionPreview};
use trellis_model::InstanceStatus;

/// The policy's fields: key and label. `audit_days` belongs to the default alone.
pub(super) const FIELDS: [(&str, &str); 5] = [
    ("succeeded_days", "Succeeded"),
    ("failed_days", "Failed"),
    ("canceled_days", "Canceled"),
    ("timed_out_days", "Timed out"),
    ("audit_days", "Audit log"),
];

fn days_of(r: &Retention, key: &str) -> Option<i32> {
    match key {
        "succeeded_days" => r.succeeded_days,
        "failed_days" => r.failed_days,
        "canceled_days" => r.canceled_days,
        "timed_out_days" => r.timed_out_days,
        _ => r.audit_days.flatten(),
    }
}

#[component]
pub fn RetentionPage() -> impl IntoView {
    // `None`: the default policy.
    let scope = RwSignal::new(None::<String>);
    let workflows = RwSignal::new(Vec::<(String, String)>::new());
    let values: [RwSignal<String>; 5] = std::array::from_fn(|_| RwSignal::new(String::new()));
    let inherited = RwSignal::new(false);
    let preview = RwSignal::new(None::<RetentionPreview>);
    let error = RwSignal::new(None::<ApiError>);
    let saved = RwSignal::new(None::<String>);
    load(api::workflow_names(false, api::WORKFLOW_CHOICES), move |all| workflows.set(all));
    Effect::new(move |_| {
        let scope = scope.get();
        preview.set(None);
        read_policy(scope, values, inherited, error);
    });
    let body = move || policy_body(&values.map(|v| v.get_untracked()), scope.get_untracked().is_none());
    // Settled here: the error view keeps the whole `ApiError`, to name the refused fields.
    let changing = Mutation::new();
    let ask = move |_: ()| {
        saved.set(None);
        let (scope, policy) = (scope.get_untracked(), body());
        changing.settle(async move { api_admin::preview_retention(scope.as_deref(), &policy).await }, move |said| {
            match said {
                Ok(p) => {
                    error.set(None);
                    preview.set(Some(p));
                }
                Err(e) => error.set(Some(e)),
            }
        });
    };
    let confirm = move |_| {
        let (scope, policy) = (scope.get_untracked(), body());
        changing.settle(
            async move { api_admin::put_retention(scope.as_deref(), &policy).await },
            move |said| match said {
                Ok(r) => {
                    preview.set(None);
                    inherited.set(r.inherited);
                    saved.set(Some("Saved. The next sweep applies it.".to_owned()));
                }
                Err(e) => error.set(Some(e)),
            },
        );
    };
    let message = Signal::derive(move || error.with(|e| alert_text(e.as_ref())));

    view! {
        <main class="page">
            <div class="toolbar"><h1>"Retention"</h1></div>
            <p class="muted">"Finished instances older than these ages (in days, by when they ended) are deleted with their history. Blank keeps forever."</p>
            <label class="scope">"Policy of "
                <ScopePicker workflows=workflows on_pick=Callback::new(move |v| scope.set(v)) />
            </label>
            <Show when=move || inherited.get() && scope.with(Option::is_some)>
                <p class="muted" data-testid="retention-inherited">"This workflow follows the default; saving gives it a policy of its own."</p>
            </Show>
            <ErrorAlert message=message />
            <PolicyForm default=Signal::derive(move || scope.with(Option::is_none)) values=values error=error
                on_edit=Callback::new(move |_| preview.set(None)) on_save=Callback::new(ask) />
            {move || saved.get().map(|s| view! { <p class="notice" role="status">{s}</p> })}
            {move || preview.get().map(|p| view! { <PreviewBox p=p on_confirm=Callback::new(confirm) on_close=Callback::new(move |_| preview.set(None)) /> })}
        </main>
    }
}

/// Reads `scope`'s policy (`None`: the default) into the form.
fn read_policy(
    scope: Option<String>,
    values: [RwSignal<String>; 5],
    inherited: RwSignal<bool>,
    error: RwSignal<Option<ApiError>>,
) {
    spawn_local(async move {
        match api_admin::retention(scope.as_deref()).await {
            Ok(r) => {
                for (i, (key, _)) in FIELDS.iter().enumerate() {
                    values[i].set(days_of(&r, key).map(|d| d.to_string()).unwrap_or_default());
                }
                inherited.set(r.inherited);
                error.set(None);
            }
            Err(e) => error.set(Some(e)),
        }
    });
}

/// The alert above the form. Refused values are named at their fields; it then only points there.
fn alert_text(error: Option<&ApiError>) -> Option<String> {
    match error {
        Some(ApiError::Problem(p)) if !p.errors.is_empty() => Some("Fix the values marked below.".to_owned()),
        other => other.map(ApiError::message),
    }
}

/// The body of a save or a preview: a blank field keeps forever (`null`); anything else goes as
/// typed, so the server names what it refuses. The audit log's age belongs to the default alone.
fn policy_body(values: &[String; 5], default: bool) -> Value {
    let mut policy = serde_json::Map::new();
    for ((key, _), text) in FIELDS.iter().zip(values) {
        if *key == "audit_days" && !default {
            continue;
        }
        let value = match text.trim() {
            "" => Value::Null,
            t => t.parse::<i64>().map(Value::from).unwrap_or_else(|_| json!(t)),
        };
        policy.insert((*key).to_owned(), value);
    }
    Value::Object(policy)
}

/// Whose policy is shown: the default's or one workflow's.
#[component]
fn ScopePicker(workflows: RwSignal<Vec<(String, String)>>, on_pick: Callback<Option<String>>) -> impl IntoView {
    view! {
        <select data-testid="retention-scope" on:change=move |ev| {
            let v = event_target_value(&ev);
            on_pick.run((!v.is_empty()).then_some(v));
        }>
            <option value="">"every workflow without its own (the default)"</option>
            <For each=move || workflows.get() key=|w| w.0.clone() let:w>
                <option value=w.0.clone()>{w.1.clone()}</option>
            </For>
        </select>
    }
}

#[component]
fn PreviewBox(p: RetentionPreview, on_confirm: Callback<()>, on_close: Callback<()>) -> impl IntoView {
    let statuses: Vec<String> = InstanceStatus::ALL
        .iter()
        .filter(|s| p.by_status.get(**s) > 0)
        .map(|s| format!("{} {}", p.by_status.get(*s), s.as_str().replace('_', " ")))
        .collect();
    let headline = match p.instances {
        0 => "Saving deletes nothing now.".to_owned(),
        1 => format!("Saving deletes 1 finished instance now, with {} history entries.", p.history_entries),
        n => format!("Saving deletes {n} finished instances now, with {} history entries.", p.history_entries),
    };
    view! {
        <div class="bulk-preview" role="dialog" aria-label="Retention preview" data-testid="retention-preview-box">
            <h2>"Before saving"</h2>
            <p data-testid="retention-preview-count">{headline}</p>
            {(!statuses.is_empty()).then(|| view! { <p>{format!("By status: {}.", statuses.join(", "))}</p> })}
            {(!p.by_workflow.is_empty()).then(|| view! {
                <ul class="busiest">
                    {p.by_workflow.iter().take(10).map(|w| view! {
                        <li>{w.workflow_name.clone().unwrap_or_else(|| w.workflow_id.clone())} " " <span class="muted">{w.count}</span></li>
                    }).collect_view()}
                </ul>
            })}
            <div class="dialog-buttons">
                <button type="button" class="primary" data-testid="retention-confirm" on:click=move |_| on_confirm.run(())>"Confirm and save"</button>
                <button type="button" on:click=move |_| on_close.run(())>"Close"</button>
            </div>
        </div>
    }
}
