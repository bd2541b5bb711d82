//! One node of the run graph: the shared box with the node's status and attempt count in place
//! of its type. Focusable, and named with its status (and error) for screen readers.

use crate::components::run::state::RunView;
use crate::components::scene::node_frame::{shape_text, NodeFrame};
use crate::designer::scene::NodeShape;
use crate::run::items;
use leptos::prelude::*;

#[component]
pub fn RunNode(id: String, shape: Memo<Option<NodeShape>>) -> impl IntoView {
    let v = expect_context::<RunView>();
    let key = id.clone();
    let run = Memo::new(move |_| {
        v.run.with(|r| (r.node_status(&key).to_owned(), r.nodes.get(&key).map(|n| (n.attempt, n.error.clone()))))
    });
    let status = move || run.with(|(s, _)| s.clone());
    let key = id.clone();
    // A subworkflow node's child, while the node waits for it.
    let child = Memo::new(move |_| {
        v.detail.with(|d| d.as_ref().and_then(|d| d.nodes.iter().find(|n| n.id == key)?.child_status))
    });
    let key = id.clone();
    let items = Memo::new(move |_| v.run.with(|r| v.detail.with(|d| items::progress(r, d.as_ref(), &key))));
    let label = move || {
        // A running map says how far its items got; its colour already says it runs.
        if let Some(p) = items.get().filter(|_| status() == "running") {
            return items::progress_text(&p);
        }
        let own = run.with(|(s, n)| match n {
            Some((a, _)) if *a > 1 => format!("{} · attempt {a}", s.replace('_', " ")),
            _ => s.replace('_', " "),
        });
        match child.get() {
            // Waiting for it is what the node does: its status says no more than the child's.
            Some(c) if status() == "waiting" => format!("child {}", c.to_string().replace('_', " ")),
            _ => own,
        }
    };
    let key = id.clone();
    let slow = Memo::new(move |_| {
        let now = v.now.get();
        v.detail.with(|d| {
            let node = d.as_ref()?.nodes.iter().find(|n| n.id == key)?;
            crate::run::slow::slow_text(node, &status(), now)
        })
    });
    let label = move || match slow.get() {
        // A marker and a word, not only a colour.
        Some(_) => format!("⚠ slow · {}", label()),
        None => label(),
    };
    let tooltip = move || run.with(|(_, n)| n.as_ref().and_then(|(_, e)| e.clone()));
    let title = move || shape_text(shape, |s| s.title.clone());
    let rerun_key = id.clone();
    let rerun = move || v.rerun.with(|r| r.contains(&rerun_key)).to_string();
    let click_key = id.clone();
    view! {
        <NodeFrame
            shape=shape
            subtitle=Signal::derive(label)
            subtitle_class="node-kind run-status"
            {..}
            data-testid=format!("run-node-{id}")
            data-status=status
            data-rerun=rerun
            data-slow=move || slow.get().is_some().to_string()
            on:click=move |_| v.picked.set(Some(click_key.clone()))
            data-progress=move || items.get().map(|p| items::progress_text(&p))
            data-attempt=move || run.with(|(_, n)| n.as_ref().map_or(0, |(a, _)| *a).to_string())
            role="img"
            aria-label=move || match (tooltip(), slow.get()) {
                (Some(error), _) => format!("{}: {}, {error}", title(), label()),
                (None, Some(why)) => format!("{}: {}, {why}", title(), label()),
                (None, None) => format!("{}: {}", title(), label()),
            }
        />
    }
}
