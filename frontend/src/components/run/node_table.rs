//! Every node of the run with its live status and attempts, and its output or error as the
//! instance last read has them.

use crate::approvals::node_approval;
use crate::components::run::state::RunView;
use crate::format;
use crate::run::family::child_link;

/// How much of an output or error a row shows; the node's drawer shows all of it.
const CELL_CHARS: usize = 300;
use leptos::prelude::*;

#[component]
pub fn NodeTable() -> impl IntoView {
    let v = expect_context::<RunView>();
    let ids = move || {
        v.definition
            .with(|d| d.as_ref().map(|d| d.nodes.iter().map(|n| n.id.clone()).collect::<Vec<_>>()))
            .or_else(|| v.detail.with(|d| d.as_ref().map(|d| d.nodes.iter().map(|n| n.id.clone()).collect())))
            .unwrap_or_default()
    };
    view! {
        <table class="workflows run-nodes">
            <caption class="visually-hidden">"Nodes"</caption>
            <thead><tr><th scope="col">"Node"</th><th scope="col">"Status"</th><th scope="col">"Attempts"</th><th scope="col">"Output or error"</th></tr></thead>
            <tbody>
                <For each=ids key=|id| id.clone() let:id>
                    <NodeRow id=id />
                </For>
            </tbody>
        </table>
    }
}

#[component]
fn NodeRow(id: String) -> impl IntoView {
    let v = expect_context::<RunView>();
    let key = id.clone();
    let view_of =
        Memo::new(move |_| v.detail.with(|d| d.as_ref().and_then(|d| d.nodes.iter().find(|n| n.id == key).cloned())));
    let key = id.clone();
    let live =
        Memo::new(move |_| v.run.with(|r| r.nodes.get(&key).map(|n| (n.status.clone(), n.attempt, n.error.clone()))));
    let status = move || {
        live.with(|l| l.as_ref().map(|l| l.0.clone()))
            .or_else(|| view_of.with(|n| n.as_ref().map(|n| n.status.to_string())))
            .unwrap_or_else(|| "pending".into())
    };
    let attempts = move || {
        let stream = live.with(|l| l.as_ref().map_or(0, |l| l.1 as i64));
        stream.max(view_of.with(|n| n.as_ref().map_or(0, |n| i64::from(n.attempts))))
    };
    let detail = move || {
        let text = view_of
            .with(|n| n.as_ref().and_then(|n| n.error.clone().or_else(|| n.output.as_ref().map(|o| o.to_string()))))
            .or_else(|| live.with(|l| l.as_ref().and_then(|l| l.2.clone())))
            .unwrap_or_default();
        format::cut(&text, CELL_CHARS)
    };
    let slow = move || {
        let now = v.now.get();
        view_of.with(|n| n.as_ref().and_then(|n| crate::run::slow::slow_text(n, &status(), now)))
    };
    let child = move || view_of.with(|n| n.as_ref().and_then(child_link));
    let child_id = format!("child-link-{id}");
    let approval = move || view_of.with(|n| n.as_ref().and_then(node_approval));
    view! {
        <tr data-testid=format!("instance-node-{id}")>
            <td>{id.clone()}</td>
            <td class=move || format!("status run-{}", status())>
                {move || status().replace('_', " ")}
                {move || slow().map(|why| view! { " " <span class="slow-mark" data-testid="slow-mark">"⚠ " {why}</span> })}
            </td>
            <td>{attempts}</td>
            <td class="output">
                {move || child().map(|l| view! { <a class="child-link" href=l.href data-testid=child_id.clone()>{l.text}</a> " " })}
                {move || approval().map(|(href, _)| view! { <a class="child-link" href=href>"Open approval"</a> " " })}
                {detail}
            </td>
        </tr>
    }
}
