//! One run's graph on the compare page: the version it ran, read-only and fitted, each node
//! coloured by its status in that run, the first differing node ringed.

use super::compare_view::Run;
use crate::components::scene::node_frame::NodeFrame;
use crate::components::scene::scene_svg::{Camera, SceneSvg};
use crate::designer::scene::{self, NodeShape};
use leptos::prelude::*;
use std::collections::HashMap;

#[component]
pub fn CompareGraph(label: &'static str, run: Run, first: Option<String>) -> impl IntoView {
    let statuses: HashMap<String, String> =
        run.detail.nodes.iter().map(|n| (n.id.clone(), n.status.as_str().to_owned())).collect();
    let status_of = move |id: &str| statuses.get(id).cloned().unwrap_or_else(|| "pending".to_owned());
    let drawn = scene::read_only(&run.definition, |id| {
        let marked = if first.as_deref() == Some(id) { " first-difference" } else { "" };
        format!("run run-{}{marked}", status_of(id))
    });
    let scene = Signal::derive(move || drawn.clone());
    let status_of = StoredValue::new(status_of);
    let draw = move |id: String, shape: Memo<Option<NodeShape>>| {
        let status = status_of.with_value(|s| s(&id));
        let first = shape.with_untracked(|s| s.as_ref().is_some_and(|s| s.class.contains("first-difference")));
        let line =
            if first { format!("{} · differs first", status.replace('_', " ")) } else { status.replace('_', " ") };
        view! {
            <NodeFrame shape=shape subtitle=line.clone() subtitle_class="node-kind run-status"
                {..} data-testid=format!("compare-node-{label}-{id}") data-status=status.clone()
                data-first=first.to_string() role="img" aria-label=format!("{id}: {line}") />
        }
    };
    let fitted = Camera::Fit { width: 640.0, height: 420.0, margin: 30.0 };
    view! {
        <section class="compare-graph" aria-label=format!("Graph of run {label}")>
            <h3>{format!("Run {label}")}</h3>
            <SceneSvg scene=scene camera=fitted node={draw}
                {..} class="canvas run" data-testid=format!("compare-graph-{label}") role="group" />
        </section>
    }
}
