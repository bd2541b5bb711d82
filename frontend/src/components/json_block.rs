//! A JSON value pretty-printed in a `<pre>`. A big one (a 10,000-item map's results) shows its
//! first lines and a button for the rest: drawing tens of thousands of lines when the page
//! opens is most of what opening it costs, and few read past the start.

use crate::format;
use leptos::prelude::*;

/// Lines shown before "Show all".
pub const FIRST_LINES: usize = 200;

#[component]
pub fn JsonBlock(
    /// The value, already pretty-printed.
    text: String,
    #[prop(optional)] test_id: Option<&'static str>,
) -> impl IntoView {
    let lines = text.lines().count();
    let all = RwSignal::new(lines <= FIRST_LINES);
    let text = StoredValue::new(text);
    let shown = move || match all.get() {
        true => text.get_value(),
        false => text.with_value(|t| format::first_lines(t, FIRST_LINES)),
    };
    view! {
        <pre data-testid=test_id>{shown}</pre>
        {move || (!all.get()).then(|| view! {
            <button type="button" class="show-all" on:click=move |_| all.set(true)>
                {format!("Show all {lines} lines")}
            </button>
        })}
    }
}
