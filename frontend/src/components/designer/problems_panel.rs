//! The draft's problems in one list (the validator's merged with those the server answered the
//! last save with), above the side panel's tabs. Each entry names its node and field; choosing
//! it selects that node (or edge, or the workflow's settings) and moves the keyboard to the field.

use crate::components::designer::state::{Designer, Tab};
use crate::designer::issues::Problem;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

#[component]
pub fn ProblemsPanel() -> impl IntoView {
    let d = expect_context::<Designer>();
    let list = Memo::new(move |_| d.issues.with(|p| p.list.clone()));
    let go = move |problem: Problem| {
        d.board.update(|b| match (&problem.node, &problem.edge) {
            (Some(node), _) => b.editor.select_only(node),
            (None, Some((from, to))) => b.editor.select_edge(from, to),
            (None, None) => {}
        });
        d.tab.set(if problem.node.is_some() || problem.edge.is_some() { Tab::Node } else { Tab::Workflow });
        // The form is drawn on the next frame; then its field takes the focus.
        let test_ids = problem.field_test_ids();
        if !test_ids.is_empty() {
            request_animation_frame(move || {
                test_ids.iter().find(|id| focus_field(id));
            });
        }
    };
    view! {
        <Show when=move || list.with(|l| !l.is_empty())>
            <details class="problems-panel" open data-testid="problems-panel">
                <summary>{move || format!("Problems ({})", list.with(Vec::len))}</summary>
                <ul>
                    {move || list.get().into_iter().map(|problem| {
                        let place = problem.place();
                        let message = problem.message.clone();
                        view! {
                            <li>
                                <button type="button" class="problem" data-testid="problem-entry"
                                    on:click=move |_| go(problem.clone())>
                                    <span class="problem-place">{place}</span>
                                    <span class="problem-message">{message}</span>
                                </button>
                            </li>
                        }
                    }).collect_view()}
                </ul>
            </details>
        </Show>
    }
}

/// Focuses the side panel's field with `test_id` (or the first control inside it); false when
/// the panel draws no such field.
fn focus_field(test_id: &str) -> bool {
    let selector = format!(".side-panel [data-testid=\"{test_id}\"]");
    let Ok(Some(el)) = document().query_selector(&selector) else { return false };
    let target = match el.matches("input, textarea, select") {
        Ok(true) => Some(el),
        _ => el.query_selector("input, textarea, select").ok().flatten(),
    };
    match target.and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok()) {
        Some(target) => target.focus().is_ok(),
        None => false,
    }
}
