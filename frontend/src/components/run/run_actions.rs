//! What can be done to a running instance from its page: cancel it, and signal a node waiting
//! on a `wait_signal` (with an optional JSON payload).

use crate::api;
use crate::components::run::state::RunView;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::SignalRequest;
use trellis_model::InstanceStatus;

#[component]
pub fn RunActions(status: Signal<String>) -> impl IntoView {
    let v = expect_context::<RunView>();
    let busy = RwSignal::new(false);
    let payload = RwSignal::new(String::new());
    let live = move || status.with(|s| InstanceStatus::parse(s).is_some_and(|s| !s.is_terminal()));
    let awaiting = Memo::new(move |_| v.run.with(|r| r.awaiting_signal()));

    let cancel = move |_| {
        if !window().confirm_with_message("Cancel this instance?").unwrap_or(false) {
            return;
        }
        busy.set(true);
        spawn_local(async move {
            if let Err(err) = api::cancel_instance(&v.id.get_value()).await {
                v.error.set(Some(err.message()));
            }
            busy.set(false);
        });
    };
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
        busy.set(true);
        spawn_local(async move {
            match api::signal_instance(&v.id.get_value(), &SignalRequest { node, payload }).await {
                Ok(()) => v.error.set(None),
                Err(err) => v.error.set(Some(err.message())),
            }
            busy.set(false);
        });
    };

    view! {
        <div class="run-actions" role="group" aria-label="Actions">
            {move || live().then(|| view! {
                <button type="button" class="danger" data-testid="cancel-instance" disabled=move || busy.get() on:click=cancel>"Cancel instance"</button>
            })}
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
                    disabled=move || busy.get()
                    on:click={
                        let node = node.clone();
                        move |_| signal(node.clone())
                    }
                >
                    {format!("Signal {node}")}
                </button>
            </For>
        </div>
    }
}
