//! Per node, in topological order: status, duration and attempts in A and in B, B's duration
//! minus A's, and which node is the first where the runs differ.

use crate::compare::{Comparison, NodeRow, NodeRun};
use crate::run::waterfall::duration;
use leptos::prelude::*;

#[component]
pub fn NodeCompareTable(comparison: Comparison) -> impl IntoView {
    let first = comparison.first_difference.clone();
    view! {
        <table class="workflows compare-nodes" data-testid="compare-nodes">
            <caption>"Nodes"</caption>
            <thead>
                <tr>
                    <th scope="col">"Node"</th>
                    <th scope="col">"Status A"</th>
                    <th scope="col">"Status B"</th>
                    <th scope="col" class="version">"Duration A"</th>
                    <th scope="col" class="version">"Duration B"</th>
                    <th scope="col" class="version">"Δ"</th>
                    <th scope="col" class="version">"Attempts A / B"</th>
                </tr>
            </thead>
            <tbody>
                {comparison.rows.into_iter().map(|row| {
                    let is_first = first.as_deref() == Some(row.id.as_str());
                    view! { <Row row=row first=is_first /> }
                }).collect_view()}
            </tbody>
        </table>
    }
}

fn row_class(differs: bool, first: bool) -> &'static str {
    match (differs, first) {
        (_, true) => "differs first-difference",
        (true, false) => "differs",
        (false, false) => "",
    }
}

#[component]
fn Row(row: NodeRow, first: bool) -> impl IntoView {
    let delta = row.delta_ms().map(|d| format!("{}{}", if d < 0 { "−" } else { "+" }, duration(d.abs())));
    let status = |run: &Option<NodeRun>| {
        match run {
        Some(r) => view! { <span class=format!("status run-{}", r.status.as_str())>{r.status.as_str().replace('_', " ")}</span> }.into_any(),
        None => view! { <span class="muted">"not in this version"</span> }.into_any(),
    }
    };
    let took = |run: &Option<NodeRun>| run.as_ref().and_then(|r| r.duration_ms).map_or("—".to_owned(), duration);
    let attempts = |run: &Option<NodeRun>| run.as_ref().map_or("—".to_owned(), |r| r.attempts.to_string());
    view! {
        <tr data-testid="compare-node-row" data-node=row.id.clone() data-differs=row.differs.to_string()
            data-first=first.to_string() class=row_class(row.differs, first)>
            <th scope="row">
                <code>{row.id.clone()}</code>
                {first.then(|| view! { <span class="badge first" data-testid="first-difference-badge">"first difference"</span> })}
            </th>
            <td>{status(&row.a)}</td>
            <td>{status(&row.b)}</td>
            <td class="version">{took(&row.a)}</td>
            <td class="version">{took(&row.b)}</td>
            <td class="version">{delta.unwrap_or_else(|| "—".to_owned())}</td>
            <td class="version">{format!("{} / {}", attempts(&row.a), attempts(&row.b))}</td>
        </tr>
    }
}
