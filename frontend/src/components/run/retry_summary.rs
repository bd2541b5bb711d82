//! What a retry would do, under its form: how many nodes run again (outlined on the graph) and,
//! onto the latest version, which version and the nodes it adds that the graph does not draw.

use crate::components::run::state::RunView;
use leptos::prelude::*;

#[component]
pub fn RetrySummary(
    /// How many nodes would run again.
    count: Signal<usize>,
) -> impl IntoView {
    let v = expect_context::<RunView>();
    // Nodes the latest version adds: they run, but the graph drawn is the instance's version.
    let undrawn = move || {
        let drawn = v.definition.with(|d| d.as_ref().map(|d| d.nodes.iter().map(|n| n.id.clone()).collect::<Vec<_>>()));
        let drawn = drawn.unwrap_or_default();
        v.rerun.with(|r| r.iter().filter(|id| !drawn.contains(id)).cloned().collect::<Vec<_>>())
    };
    let onto_note = move || {
        let (version, _) = v.retry_onto.get()?;
        let added = undrawn();
        Some(if added.is_empty() {
            format!("On version {version}.")
        } else {
            format!("On version {version}, which adds {} (not drawn here).", added.join(", "))
        })
    };
    view! {
        <p class="retry-summary muted" data-testid="retry-summary" aria-live="polite">
            {move || match count.get() {
                0 => "Nothing would run again.".to_owned(),
                1 => "1 node will run again (outlined on the graph).".to_owned(),
                n => format!("{n} nodes will run again (outlined on the graph)."),
            }}
            " "
            <span data-testid="retry-onto">{onto_note}</span>
        </p>
    }
}
