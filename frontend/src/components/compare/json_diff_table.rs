//! A JSON diff of one value in runs A and B: each added, removed or changed path with its value on
//! either side, the changed side highlighted; "Same in both runs." when nothing differs.

use crate::compare::json_diff::{diff, Change, MAX_CHANGES};
use leptos::prelude::*;
use serde_json::Value;

#[component]
pub fn JsonDiffTable(#[prop(into)] title: String, before: Value, after: Value) -> impl IntoView {
    let changes = diff(&before, &after);
    let cut = changes.len() == MAX_CHANGES;
    let testid = format!("json-diff-{}", title.to_lowercase().replace(' ', "-"));
    view! {
        <section class="json-diff" aria-label=format!("{title}: A and B") data-testid=testid>
            <h3>{title.clone()}</h3>
            {if changes.is_empty() {
                view! { <p class="muted" data-testid="json-same">"Same in both runs."</p> }.into_any()
            } else {
                view! {
                    <table class="workflows">
                        <thead><tr><th scope="col">"Path"</th><th scope="col">"Change"</th><th scope="col">"A"</th><th scope="col">"B"</th></tr></thead>
                        <tbody>{changes.into_iter().map(|c| view! { <ChangeRow change=c /> }).collect_view()}</tbody>
                    </table>
                }.into_any()
            }}
            {cut.then(|| view! { <p class="muted">{format!("Only the first {MAX_CHANGES} differences are listed.")}</p> })}
        </section>
    }
}

#[component]
fn ChangeRow(change: Change) -> impl IntoView {
    let shown = |v: &Option<Value>| v.as_ref().map_or(String::new(), |v| serde_json::to_string(v).unwrap_or_default());
    let path = if change.path.is_empty() { "(the whole value)".to_owned() } else { change.path.clone() };
    let kind = change.kind.as_str();
    view! {
        <tr class=format!("json-{kind}") data-testid="json-change" data-path=change.path.clone() data-kind=kind>
            <th scope="row"><code>{path}</code></th>
            <td>{kind}</td>
            <td class="json-before"><code>{shown(&change.before)}</code></td>
            <td class="json-after"><code>{shown(&change.after)}</code></td>
        </tr>
    }
}
