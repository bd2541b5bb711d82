//! Two loaded runs compared: who they are, what differs between them as runs (workflow,
//! version), the first node where they part, both graphs, the node table and the JSON diffs.

use super::compare_graph::CompareGraph;
use super::json_diff_table::JsonDiffTable;
use super::node_compare_table::NodeCompareTable;
use crate::compare::{compare, node_outcome, Side};
use crate::{format, urls};
use leptos::prelude::*;
use serde_json::Value;
use trellis_model::api::InstanceDetail;
use trellis_model::Definition;

/// A run and the version it ran (placed for drawing).
#[derive(Clone)]
pub struct Run {
    pub detail: InstanceDetail,
    pub definition: Definition,
}

#[derive(Clone)]
pub struct Loaded {
    pub a: Run,
    pub b: Run,
}

#[component]
pub fn CompareView(loaded: Loaded) -> impl IntoView {
    let Loaded { a, b } = loaded;
    let c =
        compare(Side { run: &a.detail, definition: &a.definition }, Side { run: &b.detail, definition: &b.definition });
    let first = c.first_difference.clone();
    let summary = match &first {
        Some(id) => {
            view! { "First difference: node " <code data-testid="first-difference">{id.clone()}</code> }.into_any()
        }
        None => view! { <span data-testid="no-difference">"No node differs in status or output."</span> }.into_any(),
    };
    // The first differing node's own output (or error), where the runs part.
    let first_outputs = first.as_ref().map(|id| (id.clone(), node_outcome(&a.detail, id), node_outcome(&b.detail, id)));
    view! {
        <div class="compare-runs">
            <RunCard label="A" run=a.detail.clone() />
            <RunCard label="B" run=b.detail.clone() />
        </div>
        {c.note.clone().map(|note| view! { <p class="notice" data-testid="compare-note">{note}</p> })}
        <p class="compare-summary">{summary}</p>
        <div class="compare-graphs">
            <CompareGraph label="A" run=a.clone() first=first.clone() />
            <CompareGraph label="B" run=b.clone() first=first.clone() />
        </div>
        <NodeCompareTable comparison=c />
        <JsonDiffTable title="Input" before=a.detail.input.clone() after=b.detail.input.clone() />
        <JsonDiffTable title="Output" before=or_null(a.detail.output.clone()) after=or_null(b.detail.output.clone()) />
        {first_outputs.map(|(id, x, y)| view! {
            <JsonDiffTable title=format!("Output of node {id}") before=x after=y />
        })}
    }
}

fn or_null(v: Option<Value>) -> Value {
    v.unwrap_or(Value::Null)
}

#[component]
fn RunCard(label: &'static str, run: InstanceDetail) -> impl IntoView {
    let s = run.summary;
    let workflow = s.workflow_name.clone().unwrap_or_else(|| s.workflow_id.clone());
    view! {
        <section class="card compare-run" aria-label=format!("Run {label}") data-testid=format!("compare-run-{label}")>
            <h2>{label}": "<a href=urls::instance_page(&s.id)>{workflow}</a></h2>
            <p>
                <span class=format!("status run-{}", s.status.as_str())>{s.status.as_str().replace('_', " ")}</span>
                {format!(" · v{} · {} · started {}", s.version, format::run_duration(s.started_at, s.ended_at),
                    s.started_at.as_ref().map(format::timestamp).unwrap_or_else(|| "—".into()))}
            </p>
            <p class="muted"><code>{s.id.clone()}</code></p>
        </section>
    }
}
