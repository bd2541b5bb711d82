//! The parts every table of the app shares: its column headings, and a body that says
//! "Loading…" until its rows arrive and what it means when there are none.

use crate::components::fetch::Loading;
use leptos::prelude::*;

/// A column: its heading and the heading's class. A blank heading names the actions column,
/// for screen readers alone.
pub type Column = (&'static str, &'static str);

#[component]
pub fn TableHead(columns: &'static [Column]) -> impl IntoView {
    view! {
        <thead>
            <tr>
                {columns.iter().map(|(label, class)| {
                    let class = (!class.is_empty()).then_some(*class);
                    match *label {
                        "" => view! { <th scope="col" class=class><span class="visually-hidden">"Actions"</span></th> }.into_any(),
                        label => view! { <th scope="col" class=class>{label}</th> }.into_any(),
                    }
                }).collect_view()}
            </tr>
        </thead>
    }
}

/// A table's body: "Loading…" while `rows` is `None`, `empty` when it holds none, else `row` of each.
#[component]
pub fn TableRows<T, V, F>(
    #[prop(into)] rows: Signal<Option<Vec<T>>>,
    /// How many columns the message rows span.
    columns: usize,
    empty: &'static str,
    row: F,
) -> impl IntoView
where
    T: Clone + Send + Sync + 'static,
    V: IntoView + 'static,
    F: Fn(T) -> V + Clone + Send + Sync + 'static,
{
    let message = move |text: AnyView| view! { <tr><td colspan=columns class="empty">{text}</td></tr> }.into_any();
    view! {
        <tbody>
            {move || match rows.get() {
                None => message(view! { <Loading /> }.into_any()),
                Some(list) if list.is_empty() => message(empty.into_any()),
                Some(list) => list.into_iter().map(row.clone()).collect_view().into_any(),
            }}
        </tbody>
    }
}
