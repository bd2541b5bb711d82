//! Why a queued instance has not started (or which of a running one's nodes wait for a slot),
//! reread from `GET /instances/{id}/queue` whenever the status changes.

use crate::api;
use crate::components::run::state::RunView;
use crate::run::queue_text::explain;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn QueueExplain(status: Signal<String>) -> impl IntoView {
    let v = expect_context::<RunView>();
    let lines = RwSignal::new(Vec::<String>::new());
    Effect::new(move |_| {
        let s = status.get();
        if !matches!(s.as_str(), "queued" | "running") {
            lines.set(Vec::new());
            return;
        }
        let id = v.id.get_value();
        spawn_local(async move {
            // Quietly nothing on an error: the explanation is a help, the page works without it.
            let found = api::instance_queue(&id).await.map(|p| explain(&p)).unwrap_or_default();
            lines.try_set(found);
        });
    });
    view! {
        {move || (!lines.with(Vec::is_empty)).then(|| view! {
            <section class="queue-explain" data-testid="queue-explain" aria-label="Why it waits" aria-live="polite">
                {lines.get().into_iter().map(|l| view! { <p>{l}</p> }).collect_view()}
            </section>
        })}
    }
}
