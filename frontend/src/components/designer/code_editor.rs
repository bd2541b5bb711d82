//! The script editor: a monospace text area with a line-number gutter, where Tab and
//! Shift+Tab indent and outdent (`crate::designer::code`) instead of leaving the field.
//! Escape, then Tab, leaves it, so the keyboard is never trapped.

use crate::designer::code;
use leptos::ev::KeyboardEvent;
use leptos::html;
use leptos::prelude::*;

#[component]
pub fn CodeEditor(test_id: String, initial: String, on_input: Callback<String>) -> impl IntoView {
    let lines = RwSignal::new(code::line_numbers(&initial));
    let area = NodeRef::<html::Textarea>::new();
    let gutter = NodeRef::<html::Pre>::new();
    // Set by Escape: the next Tab moves focus on as usual.
    let released = RwSignal::new(false);
    let changed = move |text: String| {
        lines.set(code::line_numbers(&text));
        on_input.run(text);
    };
    let keydown = move |ev: KeyboardEvent| {
        if ev.key() == "Escape" {
            released.set(true);
            return;
        }
        let is_tab = ev.key() == "Tab" && !ev.ctrl_key() && !ev.alt_key() && !ev.meta_key();
        if !is_tab || released.get_untracked() {
            released.set(false);
            return;
        }
        let Some(el) = area.get_untracked() else { return };
        ev.prevent_default();
        let start = el.selection_start().ok().flatten().unwrap_or(0);
        let end = el.selection_end().ok().flatten().unwrap_or(start);
        let edited = code::tab(&el.value(), start, end, ev.shift_key());
        el.set_value(&edited.text);
        let _ = el.set_selection_range(edited.start, edited.end);
        changed(edited.text);
    };
    // The gutter scrolls with the text.
    let scrolled = move |_| {
        if let (Some(el), Some(g)) = (area.get_untracked(), gutter.get_untracked()) {
            g.set_scroll_top(el.scroll_top());
        }
    };
    view! {
        <div class="code-editor">
            <pre class="gutter" aria-hidden="true" node_ref=gutter>{move || lines.get()}</pre>
            <textarea
                node_ref=area
                data-testid=test_id
                rows="10"
                wrap="off"
                spellcheck="false"
                autocapitalize="off"
                prop:value=initial
                on:input=move |ev| changed(event_target_value(&ev))
                on:keydown=keydown
                on:scroll=scrolled
            ></textarea>
        </div>
    }
}
