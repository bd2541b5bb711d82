//! Published versions: the history, comparing any two (or one with the draft) on the canvas, and
//! restoring one into the draft.

use crate::components::designer::state::Designer;
use crate::format;
use crate::format::{version_name, DRAFT};
use leptos::prelude::*;

#[component]
pub fn VersionsPanel() -> impl IntoView {
    let d = expect_context::<Designer>();
    let from = RwSignal::new(None::<i64>);
    let to = RwSignal::new(None::<i64>);
    // Default to comparing the last two versions.
    Effect::new(move |_| {
        let numbers: Vec<i64> = d.versions.with(|v| v.iter().map(|s| s.version).collect());
        let newest = numbers.iter().copied().max();
        to.set(newest);
        from.set(newest.map(|n| numbers.iter().copied().filter(|&m| m < n).max().unwrap_or(n)));
    });
    let picker = move |label: &'static str, testid: &'static str, value: RwSignal<Option<i64>>| {
        view! {
            <label class="field inline">
                <span class="field-label">{label}</span>
                <select
                    data-testid=testid
                    on:change=move |ev| value.set(event_target_value(&ev).parse().ok())
                    prop:value=move || value.get().map(|n| n.to_string()).unwrap_or_default()
                >
                    {move || {
                        d.versions
                            .get()
                            .into_iter()
                            .map(|v| v.version)
                            .chain([DRAFT])
                            .map(|n| view! { <option value=n.to_string()>{version_name(n)}</option> })
                            .collect_view()
                    }}
                </select>
            </label>
        }
    };
    let compare = move |_| {
        if let (Some(a), Some(b)) = (from.get_untracked(), to.get_untracked()) {
            d.compare(a, b);
        }
    };
    let rows = move || {
        d.versions
            .get()
            .into_iter()
            .map(|v| {
                let n = v.version;
                let when = format::timestamp(&v.published_at);
                let by = v.published_by.clone().unwrap_or_default();
                view! {
                    <li data-testid=format!("version-{n}")>
                        <strong>{format!("v{n}")}</strong>
                        <span class="muted">{format!(" {when} {by}")}</span>
                        {v.note.clone().map(|note| view! { <p>{note}</p> })}
                        <button type="button" on:click=move |_| d.restore(n) aria-label=format!("Restore v{n}")>
                            "Restore"
                        </button>
                    </li>
                }
            })
            .collect_view()
    };
    view! {
        <section class="versions" aria-label="Versions">
            <h2>"Versions"</h2>
            <Show
                when=move || d.versions.with(|v| !v.is_empty())
                fallback=|| view! { <p class="hint">"Nothing published yet. Publish makes the draft version 1."</p> }
            >
                <div class="compare">
                    {picker("From", "diff-from", from)}
                    {picker("To", "diff-to", to)}
                    <button type="button" on:click=compare>"Compare"</button>
                </div>
                <ul class="version-list">{rows}</ul>
            </Show>
        </section>
    }
}
