//! Adding an alert rule: a name, what to be told about, for which workflow, where to post; the
//! queue's depth and how long for a queue rule; the dedupe window. A field the form or the
//! server refuses says why under itself. The new rule's signing secret is shown once.

use crate::alert_rules::{rule_from, AlertDraft, WHEN_CHOICES};
use crate::api_alerts;
use crate::components::copy_button::CopyButton;
use crate::components::mutation::Mutation;
use crate::error::ApiError;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::CreatedAlertRule;

/// Why each field was refused, by the API's name for it.
type Refusals = RwSignal<Vec<(String, String)>>;

#[component]
pub fn AlertForm(on_done: Callback<Result<String, String>>) -> impl IntoView {
    let draft = RwSignal::new(AlertDraft { when: "failed".into(), ..Default::default() });
    let refused: Refusals = RwSignal::new(Vec::new());
    let created = RwSignal::new(None::<CreatedAlertRule>);
    let workflows = RwSignal::new(Vec::<(String, String)>::new());
    spawn_local(async move {
        // Without the list the rule can still watch every workflow; the page shows the failure.
        if let Ok(list) = crate::api::workflow_names(false, crate::api::WORKFLOW_CHOICES).await {
            workflows.set(list);
        }
    });
    let adding = Mutation::new();
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = match rule_from(&draft.get_untracked()) {
            Ok(body) => body,
            Err((field, why)) => return refused.set(vec![(field.to_owned(), why)]),
        };
        refused.set(Vec::new());
        adding.settle(async move { api_alerts::create(&body).await }, move |said| match said {
            Ok(rule) => {
                draft.set(AlertDraft { when: "failed".into(), ..Default::default() });
                on_done.run(Ok(format!("Added the alert {}.", rule.rule.name)));
                created.set(Some(rule));
            }
            Err(e) => report(e, refused, on_done),
        });
    };
    let queue = move || draft.with(|d| d.when == "queue_depth");
    view! {
        <section class="panel" aria-label="Add an alert">
            <h2>"Add an alert"</h2>
            {move || created.get().map(|c| view! { <SecretOnce created=c on_done=Callback::new(move |_| created.set(None)) /> })}
            <form class="alert-form" on:submit=add novalidate>
                <TextField key="name" label="Name" hint="What the message calls it, e.g. Orders failing" draft refused
                    value=|d| d.name.clone() set=|d, v| d.name = v />
                <WhenField draft refused />
                <WorkflowField draft workflows />
                <TextField key="url" label="Send to (URL)" hint="A Slack incoming webhook or any HTTPS endpoint; signed per Standard Webhooks" draft refused
                    value=|d| d.url.clone() set=|d, v| d.url = v />
                <Show when=queue>
                    <TextField key="threshold" label="More than (queued instances)" hint="Alert when the queue is deeper than this" draft refused
                        value=|d| d.threshold.clone() set=|d, v| d.threshold = v />
                    <TextField key="for_ms" label="For (seconds)" hint="Without a break for this long; empty is at once" draft refused
                        value=|d| d.for_secs.clone() set=|d, v| d.for_secs = v />
                </Show>
                <TextField key="dedupe_ms" label="Quiet window (minutes)" hint="Repeats of the same failure within it are counted, not sent" draft refused
                    value=|d| d.dedupe_mins.clone() set=|d, v| d.dedupe_mins = v />
                <div class="form-actions"><button type="submit" class="primary" data-testid="alert-add">"Add alert"</button></div>
            </form>
        </section>
    }
}

/// A refusal naming fields goes under them; any other goes to the page.
fn report(e: ApiError, refused: Refusals, on_done: Callback<Result<String, String>>) {
    let named: Vec<(String, String)> = match &e {
        ApiError::Problem(p) => p.errors.iter().filter_map(|i| Some((i.path.clone()?, i.message.clone()))).collect(),
        ApiError::Transport(_) => Vec::new(),
    };
    if named.is_empty() {
        on_done.run(Err(e.message()));
    } else {
        refused.set(named);
    }
}

fn refusal(refused: Refusals, key: &'static str) -> impl Fn() -> Option<String> + Copy {
    move || refused.with(|r| r.iter().find(|(f, _)| f == key).map(|(_, m)| m.clone()))
}

/// One text field: its label, hint and refusal, tied to the control for screen readers.
#[component]
fn TextField(
    key: &'static str,
    label: &'static str,
    hint: &'static str,
    draft: RwSignal<AlertDraft>,
    refused: Refusals,
    value: fn(&AlertDraft) -> String,
    set: fn(&mut AlertDraft, String),
) -> impl IntoView {
    let why = refusal(refused, key);
    let id = format!("alert-{key}");
    view! {
        <div class="field" class:has-problem=move || why().is_some()>
            <label for=id.clone()>{label}</label>
            <input id=id.clone() data-testid=id.clone() spellcheck="false" autocomplete="off"
                aria-describedby=format!("{id}-hint {id}-error") aria-invalid=move || why().is_some().then_some("true")
                prop:value=move || draft.with(value) on:input=move |ev| draft.update(|d| set(d, event_target_value(&ev))) />
            <span class="hint" id=format!("{id}-hint")>{hint}</span>
            <span class="field-problem" id=format!("{id}-error") data-testid=format!("{id}-error") role="alert">{why}</span>
        </div>
    }
}

#[component]
fn WhenField(draft: RwSignal<AlertDraft>, refused: Refusals) -> impl IntoView {
    let why = refusal(refused, "when");
    view! {
        <div class="field" class:has-problem=move || why().is_some()>
            <label for="alert-when">"When"</label>
            <select id="alert-when" data-testid="alert-when" aria-describedby="alert-when-error"
                on:change=move |ev| draft.update(|d| d.when = event_target_value(&ev))>
                {WHEN_CHOICES.iter().map(|(when, label)| view! {
                    <option value=when.as_str() selected=move || draft.with(|d| d.when == when.as_str())>{*label}</option>
                }).collect_view()}
            </select>
            <span class="field-problem" id="alert-when-error" role="alert">{why}</span>
        </div>
    }
}

#[component]
fn WorkflowField(draft: RwSignal<AlertDraft>, workflows: RwSignal<Vec<(String, String)>>) -> impl IntoView {
    view! {
        <div class="field">
            <label for="alert-workflow">"Workflow"</label>
            <select id="alert-workflow" data-testid="alert-workflow"
                on:change=move |ev| draft.update(|d| d.workflow = event_target_value(&ev))>
                <option value="" selected=move || draft.with(|d| d.workflow.is_empty())>"Every workflow"</option>
                <For each=move || workflows.get() key=|(id, _)| id.clone() let((id, name))>
                    <option value=id.clone() selected=move || draft.with(|d| d.workflow == id)>{name}</option>
                </For>
            </select>
        </div>
    }
}

/// The new rule's secret, this once, and how a receiver checks it.
#[component]
fn SecretOnce(created: CreatedAlertRule, on_done: Callback<()>) -> impl IntoView {
    let secret = created.secret.clone();
    view! {
        <div class="secret-once" role="status" data-testid="alert-created">
            <p><strong>{format!("Alert {} added. Copy its signing secret now: it is not shown again.", created.rule.name)}</strong></p>
            <p>"Secret " <code data-testid="alert-secret">{secret.clone()}</code> " " <CopyButton text=secret label="Copy secret" /></p>
            <p class="muted">"Each delivery carries " <code>"webhook-id"</code> ", " <code>"webhook-timestamp"</code> " and "
                <code>"webhook-signature"</code> " (HMAC-SHA256 of id.timestamp.body with this secret); its JSON has a Slack-ready "
                <code>"text"</code> "."</p>
            <button type="button" on:click=move |_| on_done.run(())>"Done"</button>
        </div>
    }
}
