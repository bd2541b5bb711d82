//! The bar above the canvas: the workflow's name and state, undo/redo, layout, fit, save and
//! publish.

use crate::components::designer::canvas::fit_to_canvas;
use crate::components::designer::state::Designer;
use crate::designer::editor::Edit;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn Toolbar(svg: NodeRef<leptos::svg::Svg>) -> impl IntoView {
    let d = expect_context::<Designer>();
    let board = d.board;
    let dirty = Memo::new(move |_| board.with(|b| b.editor.is_dirty()));
    let problems = Memo::new(move |_| d.issues.with(|p| p.count()));
    let undo = move |_| {
        board.update(|b| {
            b.editor.undo();
        })
    };
    let redo = move |_| {
        board.update(|b| {
            b.editor.redo();
        })
    };
    let fit = move |_| fit_to_canvas(board, svg);
    let save = move |_| {
        spawn_local(async move {
            d.save(false).await;
        })
    };
    let status = move || {
        let n = problems.get();
        let saved = if dirty.get() { "Unsaved changes" } else { "All changes saved" };
        if n == 0 {
            saved.to_owned()
        } else {
            format!("{saved} · {n} problem{}", if n == 1 { "" } else { "s" })
        }
    };
    view! {
        <div class="designer-toolbar" role="toolbar" aria-label="Designer">
            <a class="back" href="/workflows">"← Workflows"</a>
            <a data-testid="workflow-instances" href=move || crate::instance_filter::InstanceFilter { workflow: Some(d.id.get_value()), ..Default::default() }.page()>
                "Instances"
            </a>
            <a data-testid="workflow-triggers" href=move || format!("{}/triggers", crate::urls::designer_page(&d.id.get_value()))>
                "Triggers"
            </a>
            <h1 data-testid="workflow-name" title=move || d.name.get()>{move || d.name.get()}</h1>
            <span class="status" data-testid="save-status" class:dirty=move || dirty.get()>{status}</span>
            <span class="spacer"></span>
            <button type="button" title="Undo (Ctrl+Z)" disabled=move || !board.with(|b| b.editor.can_undo()) on:click=undo>"Undo"</button>
            <button type="button" title="Redo (Ctrl+Shift+Z)" disabled=move || !board.with(|b| b.editor.can_redo()) on:click=redo>"Redo"</button>
            <button type="button" on:click=move |_| d.edit(Edit::AutoLayout)>"Auto-layout"</button>
            <button type="button" on:click=fit>"Fit to view"</button>
            <button type="button" title="Save (Ctrl+S)" disabled=move || d.busy.get() on:click=save>"Save"</button>
            <button type="button" class="primary" disabled=move || d.busy.get() on:click=move |_| d.publish()>"Publish"</button>
        </div>
    }
}
