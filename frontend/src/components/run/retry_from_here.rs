//! Under the run graph, for the node last clicked while a retry may be made: "Retry from here",
//! which opens the retry (with its preview) from that node.

use crate::components::run::state::RunView;
use leptos::prelude::*;

#[component]
pub fn RetryFromHere() -> impl IntoView {
    let v = expect_context::<RunView>();
    let node = move || v.picked.get().filter(|_| v.can_retry.get());
    view! {
        {move || node().map(|node| {
            let from = node.clone();
            view! {
                <div class="retry-from-here" data-testid="picked-node">
                    <span>"Node " <code>{node.clone()}</code></span>
                    <button type="button" data-testid="retry-from-here" on:click=move |_| v.retry.set(Some(from.clone()))>
                        "Retry from here"
                    </button>
                </div>
            }
        })}
    }
}
