//! The selected edge: when it lets its target run, and deleting it.

use crate::components::designer::state::Designer;
use crate::designer::editor::Edit;
use leptos::prelude::*;
use trellis_model::config::{node_outcomes, NodeKind};
use trellis_model::EdgeWhen;

#[component]
pub fn EdgeForm(from: String, to: String) -> impl IntoView {
    let d = expect_context::<Designer>();
    let (current, outcomes) = d.board.with_untracked(|b| {
        let when = b.editor.doc.edges.iter().find(|e| e.from == from && e.to == to).map(|e| e.when.as_str().to_owned());
        let source = b.editor.node(&from);
        let kind = source.and_then(|n| n.known_kind());
        let outcomes = source.zip(kind).and_then(|(n, kind)| node_outcomes(kind, &n.config)).unwrap_or_default();
        (when.unwrap_or_default(), (kind, outcomes))
    });
    let (kind, outcomes) = outcomes;
    // A branch's edges follow its outcomes; an approval's may also follow success (either decision).
    let lead: Vec<String> = match kind {
        Some(NodeKind::Approval) => std::iter::once("success".to_owned()).chain(outcomes).collect(),
        _ if outcomes.is_empty() => vec!["success".into()],
        _ => outcomes,
    };
    let mut choices: Vec<String> = lead.into_iter().chain(["failure".to_owned(), "always".to_owned()]).collect();
    if !choices.contains(&current) {
        choices.insert(0, current.clone());
    }
    let (f, t) = (from.clone(), to.clone());
    let on_change = move |ev: leptos::ev::Event| {
        let when = EdgeWhen::from(event_target_value(&ev));
        d.edit(Edit::SetEdgeWhen { from: f.clone(), to: t.clone(), when });
    };
    let problems = {
        let key = (from.clone(), to.clone());
        move || d.issues.with(|p| p.edges.get(&key).cloned().unwrap_or_default())
    };
    let options = choices
        .into_iter()
        .map(|c| {
            let selected = c == current;
            view! { <option value=c.clone() selected=selected>{c.clone()}</option> }
        })
        .collect_view();
    view! {
        <section class="edge-form" aria-label="Edge">
            <h2>{format!("{from} → {to}")}</h2>
            <label class="field">
                <span class="field-label">"Runs the target when"</span>
                <select data-testid="field-when" on:change=on_change>{options}</select>
            </label>
            <ul class="problems">{move || problems().into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}</ul>
            <button type="button" class="danger" on:click=move |_| d.edit(Edit::DeleteSelection)>"Delete edge"</button>
        </section>
    }
}
