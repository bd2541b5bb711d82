//! Adding a trigger: a webhook at once (its URL and secret then shown once, with a signed
//! `curl` to try it), or a cron schedule whose next fire times, or the parser's reason, show
//! under the fields as one types, or a broker trigger (`new_broker_trigger.rs`).

use super::new_broker_trigger::NewBrokerTrigger;
use crate::api_triggers;
use crate::components::copy_button::CopyButton;
use crate::components::mutation::Mutation;
use crate::webhook_example::{example_body, signed_curl};
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde_json::json;
use trellis_model::api::CreatedTrigger;

#[component]
pub fn NewTrigger(
    workflow: String,
    /// The published version's input schema: the test delivery's body is an example of it.
    #[prop(into)]
    schema: Signal<Option<serde_json::Value>>,
    on_created: Callback<Result<(), String>>,
) -> impl IntoView {
    let workflow = StoredValue::new(workflow);
    let shown = RwSignal::new(None::<CreatedTrigger>);
    let expression = RwSignal::new("0 9 * * 1-5".to_owned());
    let timezone = RwSignal::new("UTC".to_owned());
    let times = RwSignal::new(Ok::<Vec<String>, String>(Vec::new()));
    // Each keystroke asks again; an answer to an older text is dropped.
    let asked = StoredValue::new(0u64);
    Effect::new(move |_| {
        let (e, z) = (expression.get(), timezone.get());
        let ticket = asked.get_value() + 1;
        asked.set_value(ticket);
        spawn_local(async move {
            let answer = api_triggers::preview(&e, &z).await;
            if asked.get_value() == ticket {
                times.set(answer.map(|t| t.times).map_err(|e| problem_text(&e)));
            }
        });
    });
    let creating = Mutation::new();
    let create = move |body: serde_json::Value| {
        creating.settle(
            async move { api_triggers::create(&workflow.get_value(), &body).await },
            move |said| match said {
                Ok(created) => {
                    shown.set(Some(created));
                    on_created.run(Ok(()));
                }
                Err(e) => on_created.run(Err(problem_text(&e))),
            },
        );
    };
    let add_webhook = move |_| create(json!({"kind": "webhook"}));
    let add_cron = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        create(json!({"kind": "cron", "expression": expression.get_untracked(), "timezone": timezone.get_untracked()}));
    };

    view! {
        <section class="panel new-trigger" aria-label="Add a trigger">
            <div class="panel-header">
                <h2>"Add a trigger"</h2>
                <button type="button" class="primary" data-testid="add-webhook" on:click=add_webhook>"Add a webhook"</button>
            </div>
            {move || shown.get().map(|c| {
                let body = Signal::derive(move || schema.with(|s| example_body(s.as_ref())));
                view! { <Shown c=c body=body on_done=Callback::new(move |_| shown.set(None)) /> }
            })}
            <form class="inline-form" aria-label="Add a schedule" on:submit=add_cron>
                <label>"Cron " <input class="mono" data-testid="cron-expression" prop:value=expression
                    on:input=move |ev| expression.set(event_target_value(&ev)) /></label>
                <label>"Time zone " <input data-testid="cron-timezone" prop:value=timezone
                    on:input=move |ev| timezone.set(event_target_value(&ev)) /></label>
                <button type="submit" data-testid="add-cron" disabled=move || times.with(Result::is_err)>"Add schedule"</button>
            </form>
            <div class="cron-preview" data-testid="cron-preview" aria-live="polite">
                {move || match times.get() {
                    Ok(list) if list.is_empty() => view! { <p class="muted">"…"</p> }.into_any(),
                    Ok(list) => view! {
                        <p class="muted">"Next fire times:"</p>
                        <ol>{list.into_iter().map(|t| view! { <li data-testid="cron-time">{t}</li> }).collect_view()}</ol>
                    }.into_any(),
                    Err(why) => view! { <p class="field-error" data-testid="cron-error">{why}</p> }.into_any(),
                }}
            </div>
            <NewBrokerTrigger workflow=workflow on_created=on_created />
        </section>
    }
}

/// What was just created, shown once: a webhook's URL and secret (and how to try it), or a
/// schedule's next fire times.
#[component]
fn Shown(c: CreatedTrigger, body: Signal<serde_json::Value>, on_done: Callback<()>) -> impl IntoView {
    let url = c.trigger.url.clone().unwrap_or_default();
    let secret = c.secret.clone();
    view! {
        <div class="secret-once" role="status" data-testid="new-trigger">
            {secret.map(|secret| {
                let (at, key) = (url.clone(), secret.clone());
                let example = Signal::derive(move || signed_curl(&at, &key, &body.get()));
                view! {
                    <p><strong>"Webhook created. Copy its secret now: it is not shown again."</strong></p>
                    <p>"URL " <code data-testid="webhook-url">{url.clone()}</code> " " <CopyButton text=url.clone() label="Copy URL" /></p>
                    <p>"Secret " <code data-testid="webhook-secret">{secret.clone()}</code> " " <CopyButton text=secret.clone() label="Copy secret" /></p>
                    <p class="muted">"Send a signed test delivery:"</p>
                    <pre data-testid="webhook-example">{example}</pre>
                    <CopyButton text=example label="Copy example" />
                }
            })}
            {c.next_fire_times.map(|t| view! { <p><strong>{format!("Schedule created. Next: {}", t.first().cloned().unwrap_or_default())}</strong></p> })}
            <button type="button" on:click=move |_| on_done.run(())>"Done"</button>
        </div>
    }
}

/// The API's refusal, with the first issue's message when it names what to fix.
fn problem_text(e: &crate::error::ApiError) -> String {
    match e {
        crate::error::ApiError::Problem(p) => match p.errors.first() {
            Some(issue) => issue.message.clone(),
            None => e.message(),
        },
        _ => e.message(),
    }
}
