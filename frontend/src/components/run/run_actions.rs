//! What can be done to an instance from its page, offered only when the API would accept it for
//! the instance's status and only to a role that may act (see [`crate::run::actions`]): pause,
//! resume, cancel, retry (with its form), purge, and signal a node waiting on a `wait_signal`.

use crate::api;
use crate::components::mutation::Mutation;
use crate::components::run::retry_form::RetryForm;
use crate::components::run::run_again::RunAgain;
use crate::components::run::state::RunView;
use crate::error::ApiError;
use crate::run::actions::{available, Action};
use leptos::prelude::*;
use leptos_router::hooks::use_navigate;
use std::future::Future;
use trellis_model::api::SignalRequest;
use trellis_model::InstanceStatus;

/// Runs one call to the API through `busy` (whose error is the page's `v.error`); a refusal
/// (403, 409, ...) shows the server's `detail`, and either way the instance is reread so the
/// page shows what it is now.
pub fn act<Fut>(v: RunView, busy: Mutation, call: Fut, done: impl FnOnce() + 'static)
where
    Fut: Future<Output = Result<(), ApiError>> + 'static,
{
    busy.run_or(
        call,
        move |()| {
            v.refresh();
            done();
        },
        move |_| v.refresh(),
    );
}

#[component]
pub fn RunActions(status: Signal<String>) -> impl IntoView {
    let v = expect_context::<RunView>();
    // One action at a time; a refusal shows in the page's error view.
    let busy = Mutation::reporting_to(v.error);
    // The signed-in user's role; until it is known nothing is offered.
    let role = v.session.role();
    let actions = Memo::new(move |_| {
        let status = status.with(|s| InstanceStatus::parse(s));
        status.map(|s| available(s, role.get())).unwrap_or_default()
    });
    let has = move |a: Action| actions.with(|all| all.contains(&a));
    // The graph offers "Retry from here" and previews the retry only while one may be made.
    Effect::new(move |_| v.can_retry.set(has(Action::Retry)));
    let awaiting =
        Memo::new(move |_| if has(Action::Signal) { v.run.with(|r| r.awaiting_signal()) } else { Vec::new() });
    let id = move || v.id.get_value();

    let pause = move |_| act(v, busy, async move { api::pause_instance(&id()).await.map(drop) }, || ());
    let resume = move |_| act(v, busy, async move { api::resume_instance(&id()).await.map(drop) }, || ());
    let cancel = move |_| {
        if window().confirm_with_message("Cancel this instance?").unwrap_or(false) {
            act(v, busy, async move { api::cancel_instance(&id()).await }, || ());
        }
    };
    let navigate = use_navigate();
    let purge = move |_| {
        if !window()
            .confirm_with_message("Purge this instance and its whole history? This cannot be undone.")
            .unwrap_or(false)
        {
            return;
        }
        let navigate = navigate.clone();
        // Not `act`: after a purge there is no instance to reread, and the page goes.
        busy.run_or(
            async move { api::purge_instance(&id()).await },
            move |()| {
                v.leave();
                navigate("/instances", Default::default());
            },
            move |_| v.refresh(),
        );
    };
    view! {
        <div class="run-actions" role="group" aria-label="Actions">
            {move || has(Action::Pause).then(|| view! {
                <button type="button" data-testid="pause-instance" disabled=move || busy.pending().get() on:click=pause>"Pause"</button>
            })}
            {move || has(Action::Resume).then(|| view! {
                <button type="button" class="primary" data-testid="resume-instance" disabled=move || busy.pending().get() on:click=resume>"Resume"</button>
            })}
            {move || has(Action::Retry).then(|| view! {
                <button type="button" class="primary" data-testid="retry-instance" aria-expanded=move || v.retry.with(Option::is_some).to_string()
                    disabled=move || busy.pending().get()
                    on:click=move |_| v.retry.update(|r| *r = if r.is_some() { None } else { Some("failed".into()) })>"Retry"</button>
            })}
            {move || has(Action::Cancel).then(|| view! {
                <button type="button" class="danger" data-testid="cancel-instance" disabled=move || busy.pending().get() on:click=cancel>"Cancel"</button>
            })}
            {
                let purge = purge.clone();
                move || has(Action::Purge).then(|| {
                    let purge = purge.clone();
                    view! {
                        <button type="button" class="danger" data-testid="purge-instance" disabled=move || busy.pending().get() on:click=purge>"Purge"</button>
                    }
                })
            }
            <SignalButtons awaiting=awaiting busy=busy />
            <RunAgain />
        </div>
        {move || (v.retry.with(Option::is_some) && has(Action::Retry)).then(|| view! { <RetryForm busy /> })}
    }
}

/// For each node waiting on a signal, a button that sends it, with an optional JSON payload.
#[component]
fn SignalButtons(awaiting: Memo<Vec<String>>, busy: Mutation) -> impl IntoView {
    let v = expect_context::<RunView>();
    let payload = RwSignal::new(String::new());
    let id = move || v.id.get_value();
    let signal = move |node: String| {
        let text = payload.get_untracked();
        let payload = if text.trim().is_empty() {
            Ok(serde_json::Value::Null)
        } else {
            serde_json::from_str(&text).map_err(|e| format!("The payload is not JSON: {e}"))
        };
        let payload = match payload {
            Ok(p) => p,
            Err(message) => return v.error.set(Some(message)),
        };
        act(v, busy, async move { api::signal_instance(&id(), &SignalRequest { node, payload }).await }, || ());
    };
    view! {
        {move || (!awaiting.with(Vec::is_empty)).then(|| view! {
            <label class="signal-payload">
                "Signal payload (JSON, optional) "
                <input type="text" placeholder="{}" prop:value=move || payload.get() on:input=move |ev| payload.set(event_target_value(&ev)) />
            </label>
        })}
        <For each=move || awaiting.get() key=|n| n.clone() let:node>
            <button
                type="button"
                class="primary"
                data-testid=format!("signal-{node}")
                disabled=move || busy.pending().get()
                on:click={
                    let node = node.clone();
                    move |_| signal(node.clone())
                }
            >
                {format!("Signal {node}")}
            </button>
        </For>
    }
}
