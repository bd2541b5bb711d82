//! The chosen span's details: kind, status, start offset, duration, error and attributes.

use crate::components::run::state::RunView;
use crate::run::waterfall::{self, Row};
use leptos::prelude::*;

#[component]
pub fn SpanDetails(rows: Signal<Vec<Row>>) -> impl IntoView {
    let v = expect_context::<RunView>();
    let chosen = move || {
        v.selected.with(|s| s.as_ref().and_then(|id| rows.with(|r| r.iter().find(|r| &r.span_id == id).cloned())))
    };
    move || {
        chosen().map(|row| {
            view! {
                <div class="span-details" data-testid="span-details" role="region" aria-label="Span details">
                    <h3>{row.name.clone()}</h3>
                    <dl>
                        <dt>"Kind"</dt><dd>{row.kind.as_str()}</dd>
                        <dt>"Status"</dt><dd>{if row.open { "open" } else { row.status.as_str() }}</dd>
                        <dt>"Starts at"</dt><dd>{format!("+{}", waterfall::duration(row.offset_ms))}</dd>
                        <dt>"Duration"</dt><dd>{waterfall::duration(row.duration_ms)}</dd>
                        {row.error.clone().map(|e| view! { <dt>"Error"</dt><dd class="alert">{e}</dd> })}
                        {row.attributes.iter().filter(|(k, _)| k != "error").map(|(k, val)| view! { <dt><code>{k.clone()}</code></dt><dd>{val.clone()}</dd> }).collect_view()}
                    </dl>
                    <button type="button" on:click=move |_| v.selected.set(None)>"Close"</button>
                </div>
            }
        })
    }
}
