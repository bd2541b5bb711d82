//! The list's content filters: a field taking `input.customer=acme` (or
//! `output.<node>.<path>=<value>`), and a removable chip per active filter.

use crate::instance_filter::InstanceFilter;
use leptos::prelude::*;
use trellis_model::api::ContentFilter;

#[component]
pub fn ContentFilters(filter: Signal<InstanceFilter>, on_change: Callback<InstanceFilter>) -> impl IntoView {
    let draft = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let add = move || {
        let term = draft.get_untracked();
        if term.trim().is_empty() {
            return;
        }
        let mut next = filter.get_untracked();
        match ContentFilter::parse_term(term.trim()).and_then(|c| next.with_content(c)) {
            Ok(()) => {
                problem.set(None);
                draft.set(String::new());
                on_change.run(next);
            }
            Err(why) => problem.set(Some(why)),
        }
    };
    view! {
        <label>
            "Content "
            <input
                type="search"
                class="content-term"
                placeholder="input.customer=acme"
                data-testid="filter-content"
                aria-describedby="content-help"
                aria-invalid=move || problem.with(Option::is_some).to_string()
                prop:value=move || draft.get()
                on:input=move |ev| draft.set(event_target_value(&ev))
                on:keydown=move |ev| if ev.key() == "Enter" { ev.prevent_default(); add() }
            />
        </label>
        <button type="button" data-testid="add-content" on:click=move |_| add()>"Add"</button>
        <p id="content-help" class="content-help" class:error=move || problem.with(Option::is_some) role="status">
            {move || problem.get().unwrap_or_else(|| {
                "input.<path>=<value> or output.<node>.<path>=<value>; 42 is a number, \"42\" text.".to_owned()
            })}
        </p>
        <ContentChips filter=filter on_change=on_change />
    }
}

/// A chip per active content filter; its button takes it out.
#[component]
fn ContentChips(filter: Signal<InstanceFilter>, on_change: Callback<InstanceFilter>) -> impl IntoView {
    let terms = move || filter.with(|f| f.content.iter().map(|c| (c.name(), c.term())).collect::<Vec<_>>());
    view! {
        <ul class="content-chips" aria-label="Content filters" data-testid="content-chips">
            <For each=terms key=|(_, term)| term.clone() children=move |(name, term)| view! {
                <li class="content-chip">
                    <code>{term.clone()}</code>
                    <button
                        type="button"
                        class="link"
                        aria-label=format!("Remove {term}")
                        on:click=move |_| on_change.run(filter.get_untracked().without_content(&name))
                    >
                        "×"
                    </button>
                </li>
            } />
        </ul>
    }
}
