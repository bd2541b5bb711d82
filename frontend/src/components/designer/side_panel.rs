//! The panel right of the canvas: the draft's problems, then tabs for the selection, the workflow's settings, versions
//! and running it. The selection's form is rebuilt only when the selection changes or the draft
//! changes underneath it (undo, paste), never while typing in it.

use crate::components::designer::diff_panel::DiffPanel;
use crate::components::designer::edge_form::EdgeForm;
use crate::components::designer::node_form::NodeForm;
use crate::components::designer::problems_panel::ProblemsPanel;
use crate::components::designer::run_panel::RunPanel;
use crate::components::designer::settings_form::SettingsForm;
use crate::components::designer::state::{Designer, Tab};
use crate::components::designer::versions_panel::VersionsPanel;
use leptos::prelude::*;

#[derive(Debug, Clone, PartialEq)]
enum Selection {
    None,
    Node(String),
    Edge(String, String),
    Many(usize),
}

#[component]
pub fn SidePanel() -> impl IntoView {
    let d = expect_context::<Designer>();
    let selection = Memo::new(move |_| {
        d.board.with(|b| {
            let e = &b.editor;
            let what = if let Some(id) = e.single_selected() {
                Selection::Node(id)
            } else if let Some((from, to)) = &e.selected_edge {
                Selection::Edge(from.clone(), to.clone())
            } else if e.selected.len() > 1 {
                Selection::Many(e.selected.len())
            } else {
                Selection::None
            };
            (what, e.form_epoch)
        })
    });
    // Selecting something shows its form.
    Effect::new(move |previous: Option<Selection>| {
        let now = selection.with(|(s, _)| s.clone());
        if previous.as_ref() != Some(&now) && matches!(now, Selection::Node(_) | Selection::Edge(..)) {
            d.tab.set(Tab::Node);
        }
        now
    });
    let tab_button = move |tab: Tab, label: &'static str| {
        view! {
            <button
                type="button"
                role="tab"
                aria-selected=move || (d.tab.get() == tab).to_string()
                class:active=move || d.tab.get() == tab
                on:click=move |_| d.tab.set(tab)
            >
                {label}
            </button>
        }
    };
    let form = move || match selection.get().0 {
        Selection::Node(id) => view! { <NodeForm id=id /> }.into_any(),
        Selection::Edge(from, to) => view! { <EdgeForm from=from to=to /> }.into_any(),
        Selection::Many(n) => {
            view! { <p class="hint">{format!("{n} nodes selected. Delete removes them; Ctrl+C copies them.")}</p> }
                .into_any()
        }
        Selection::None => view! { <p class="hint">"Select a node or an edge to configure it."</p> }.into_any(),
    };
    // Settings reload when the draft is replaced underneath (undo, restore), not while typed into.
    let epoch = Memo::new(move |_| d.board.with(|b| b.editor.form_epoch));
    let settings = move || {
        // Read, not only tracked: a memo nobody has read never learns that the board changed.
        let _rebuilt_at = epoch.get();
        view! { <SettingsForm /> }
    };
    view! {
        <aside class="side-panel">
            <Show when=move || d.diff.with(Option::is_some)>
                <DiffPanel />
            </Show>
            <ProblemsPanel />
            <div role="tablist" class="tabs">
                {tab_button(Tab::Node, "Selection")}
                {tab_button(Tab::Workflow, "Workflow")}
                {tab_button(Tab::Versions, "Versions")}
                {tab_button(Tab::Run, "Run")}
            </div>
            <div class="tab-body" role="tabpanel">
                {move || match d.tab.get() {
                    Tab::Node => form().into_any(),
                    Tab::Workflow => settings().into_any(),
                    Tab::Versions => view! { <VersionsPanel /> }.into_any(),
                    Tab::Run => view! { <RunPanel /> }.into_any(),
                }}
            </div>
        </aside>
    }
}
