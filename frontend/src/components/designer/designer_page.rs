//! `/workflows/:id`: the designer. Loads the workflow, provides the shared state to its parts,
//! handles keyboard shortcuts and guards unsaved changes (closing the tab, following a link).

use crate::components::designer::canvas::{canvas_size, fit_to_canvas, Canvas};
use crate::components::designer::conflict_dialog::ConflictDialog;
use crate::components::designer::diff_canvas::DiffCanvas;
use crate::components::designer::leave_guard;
use crate::components::designer::palette::Palette;
use crate::components::designer::secret_suggest::SecretNames;
use crate::components::designer::side_panel::SidePanel;
use crate::components::designer::state::Designer;
use crate::components::designer::toolbar::Toolbar;
use crate::components::error_alert::ErrorAlert;
use crate::components::title::title_by_workflow;
use crate::designer::editor::Edit;
use crate::designer::keys::{command, KeyPress, Shortcut};
use leptos::ev;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos::wasm_bindgen::JsCast;

#[component]
pub fn DesignerPage(id: String) -> impl IntoView {
    let d = Designer::new(id);
    provide_context(d);
    provide_context(SecretNames::load());
    d.load();
    let svg = NodeRef::<leptos::svg::Svg>::new();

    // Once the draft is there, show all of it.
    Effect::new(move |_| {
        if d.loaded.get() {
            request_animation_frame(move || fit_to_canvas(d.board, svg));
        }
    });

    title_by_workflow("Designer", move || d.loaded.get().then(|| d.name.get()));

    let keys = window_event_listener(ev::keydown, move |ev| {
        let target = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()).map(|el| el.tag_name());
        let key = ev.key();
        let press = KeyPress {
            key: &key,
            ctrl: ev.ctrl_key(),
            meta: ev.meta_key(),
            shift: ev.shift_key(),
            target: target.as_deref().unwrap_or_default(),
        };
        if let Some(action) = command(&press, d.diff.with_untracked(Option::is_some)) {
            ev.prevent_default();
            perform(d, svg, action);
        }
    });
    let unload = window_event_listener(ev::beforeunload, move |ev| {
        if d.board.with_untracked(|b| b.editor.is_dirty()) {
            ev.prevent_default();
            ev.set_return_value("You have unsaved changes.");
        }
    });
    leave_guard::install(move || d.board.try_with_untracked(|b| b.editor.is_dirty()).unwrap_or(false));
    on_cleanup(move || {
        keys.remove();
        unload.remove();
        leave_guard::remove();
    });

    // Why the edge being drawn would be refused, while it is drawn; otherwise the last message.
    let notice = move || d.board.with(|b| b.refusal.as_ref().map(|r| r.message())).or_else(|| d.notice.get());
    view! {
        <main class="designer">
            <Toolbar svg=svg />
            <ErrorAlert message=d.error />
            <p class="notice" role="status" data-testid="notice">{notice}</p>
            <div class="designer-body">
                <Palette svg=svg />
                <div class="canvas-wrap">
                    <Show when=move || d.diff.with(Option::is_some) fallback=move || view! { <Canvas svg=svg /> }>
                        <DiffCanvas />
                    </Show>
                </div>
                <SidePanel />
            </div>
            <ConflictDialog />
        </main>
    }
}

/// Does what a shortcut asks.
fn perform(d: Designer, svg: NodeRef<leptos::svg::Svg>, action: Shortcut) {
    match action {
        Shortcut::Delete => d.edit(Edit::DeleteSelection),
        Shortcut::Undo => d.board.update(|b| {
            b.editor.undo();
        }),
        Shortcut::Redo => d.board.update(|b| {
            b.editor.redo();
        }),
        Shortcut::Copy => d.clipboard.set(d.board.with_untracked(|b| b.editor.copy())),
        Shortcut::Paste => {
            if let Some(clip) = d.clipboard.get_untracked() {
                d.edit(Edit::Paste(clip));
            }
        }
        Shortcut::SelectAll => d.board.update(|b| b.editor.select_all()),
        Shortcut::Save => spawn_local(async move {
            d.save(false).await;
        }),
        Shortcut::Deselect => d.board.update(|b| b.editor.clear_selection()),
        Shortcut::Nudge(dx, dy) => d.board.update(|b| b.nudge(dx, dy)),
        Shortcut::Zoom(factor) => {
            let (w, h) = canvas_size(&svg);
            d.board.update(|b| b.zoom_centre(factor, w, h));
        }
        Shortcut::Fit => fit_to_canvas(d.board, svg),
    }
}
