//! Adding a broker trigger: NATS JetStream (stream and subject), AMQP (a queue) or MQTT (a
//! topic), with the optional `input` and `dedupe` expressions and `max_queued`. The server
//! tries the connection before it saves, so a wrong URL or password is said at once, at its
//! field.

use crate::api_triggers;
use crate::components::mutation::Mutation;
use leptos::prelude::*;
use serde_json::{json, Map, Value};

/// The kinds, with the URL each suggests and the field naming where messages come from.
const KINDS: &[(&str, &str, &str, &str)] = &[
    ("nats", "NATS JetStream", "nats://127.0.0.1:4222", "Subject"),
    ("amqp", "AMQP (RabbitMQ)", "amqp://guest:{{ secret.AMQP_PASSWORD }}@127.0.0.1:5672/%2f", "Queue"),
    ("mqtt", "MQTT", "mqtt://127.0.0.1:1883", "Topic"),
];

#[component]
pub fn NewBrokerTrigger(workflow: StoredValue<String>, on_created: Callback<Result<(), String>>) -> impl IntoView {
    let kind = RwSignal::new("nats".to_owned());
    let url = RwSignal::new(KINDS[0].2.to_owned());
    let stream = RwSignal::new(String::new());
    let source = RwSignal::new(String::new());
    let input = RwSignal::new(String::new());
    let dedupe = RwSignal::new(String::new());
    let refused = RwSignal::new(None::<(String, String)>);
    let creating = Mutation::new();
    let pick = move |ev| {
        let chosen = event_target_value(&ev);
        if let Some((_, _, suggested, _)) = KINDS.iter().find(|(k, ..)| *k == chosen) {
            url.set((*suggested).to_owned());
        }
        kind.set(chosen);
        refused.set(None);
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = body(
            &kind.get_untracked(),
            &url.get_untracked(),
            &stream.get_untracked(),
            &source.get_untracked(),
            &input.get_untracked(),
            &dedupe.get_untracked(),
        );
        creating.settle(
            async move { api_triggers::create(&workflow.get_value(), &body).await },
            move |said| match said {
                Ok(_) => {
                    refused.set(None);
                    source.set(String::new());
                    on_created.run(Ok(()));
                    // Its consumers connect within a second: show their state once they have.
                    set_timeout(move || on_created.run(Ok(())), std::time::Duration::from_millis(1500));
                }
                Err(e) => refused.set(Some(first_problem(&e))),
            },
        );
    };
    let source_label = move || KINDS.iter().find(|(k, ..)| *k == kind.get()).map_or("Subject", |k| k.3);
    let error_at = move |field: &'static str| {
        move || {
            refused.get().filter(|(path, _)| path == field || (field == "url" && path.is_empty())).map(|(_, message)| {
            view! { <p class="field-error" role="alert" data-testid=format!("broker-error-{field}")>{message}</p> }
        })
        }
    };
    view! {
        <form class="broker-form" aria-label="Add a broker trigger" on:submit=submit data-testid="broker-form">
            <h3>"From a message broker"</h3>
            <div class="broker-fields">
                <label>"Broker "
                    <select data-testid="broker-kind" on:change=pick>
                        {KINDS.iter().map(|(k, label, ..)| view! { <option value=*k selected=move || kind.get() == *k>{*label}</option> }).collect_view()}
                    </select>
                </label>
                <label class="grow">"URL "
                    <input class="mono" data-testid="broker-url" prop:value=url on:input=move |ev| url.set(event_target_value(&ev)) />
                </label>
                <Show when=move || kind.get() == "nats">
                    <label>"Stream "
                        <input class="mono" data-testid="broker-stream" placeholder="ORDERS" prop:value=stream
                            on:input=move |ev| stream.set(event_target_value(&ev)) />
                    </label>
                </Show>
                <label>{source_label} " "
                    <input class="mono" data-testid="broker-source" prop:value=source on:input=move |ev| source.set(event_target_value(&ev)) />
                </label>
            </div>
            {error_at("url")}
            {error_at("stream")}
            {error_at("subject")}
            {error_at("queue")}
            {error_at("topic")}
            <div class="broker-fields">
                <label class="grow">"Input expression (optional) "
                    <input class="mono" data-testid="broker-input" placeholder="message.body" prop:value=input
                        on:input=move |ev| input.set(event_target_value(&ev)) />
                </label>
                <label class="grow">"Dedupe key (optional) "
                    <input class="mono" data-testid="broker-dedupe" placeholder="message.body.id" prop:value=dedupe
                        on:input=move |ev| dedupe.set(event_target_value(&ev)) />
                </label>
            </div>
            {error_at("input")}
            {error_at("dedupe")}
            <p class="muted">{move || match kind.get().as_str() {
                "mqtt" => "MQTT messages carry no id: give a dedupe key so a message delivered again after a crash starts nothing new.",
                "amqp" => "A repeated message is known by its message_id property (or the dedupe key). The queue is declared durable if it does not exist.",
                _ => "A repeated message is known by its Nats-Msg-Id header, else its stream sequence (or the dedupe key). The stream is made if it does not exist.",
            }}</p>
            <button type="submit" data-testid="add-broker">"Add broker trigger"</button>
        </form>
    }
}

/// The create request's body: only the fields given.
fn body(kind: &str, url: &str, stream: &str, source: &str, input: &str, dedupe: &str) -> Value {
    let source_field = match kind {
        "amqp" => "queue",
        "mqtt" => "topic",
        _ => "subject",
    };
    let mut body = Map::new();
    body.insert("kind".into(), json!(kind));
    body.insert("url".into(), json!(url.trim()));
    body.insert(source_field.into(), json!(source.trim()));
    if kind == "nats" {
        body.insert("stream".into(), json!(stream.trim()));
    }
    for (field, text) in [("input", input), ("dedupe", dedupe)] {
        if !text.trim().is_empty() {
            body.insert(field.into(), json!(text.trim()));
        }
    }
    Value::Object(body)
}

/// The first issue of a refusal, with its field (`""` when it names none).
fn first_problem(e: &crate::error::ApiError) -> (String, String) {
    match e {
        crate::error::ApiError::Problem(p) => match p.errors.first() {
            Some(issue) => (issue.path.clone().unwrap_or_default(), issue.message.clone()),
            None => (String::new(), e.message()),
        },
        _ => (String::new(), e.message()),
    }
}
