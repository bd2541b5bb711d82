//! `/workflows/:id`: the designer. Loads the workflow, provides the shared state to its parts,
//! handles keyboard shortcuts and guards unsaved changes (closing the tab, following a link).

use crate::api;
use crate::components::app_header::AppHeader;
use crate::components::designer::canvas::{canvas_size, Canvas};
use crate::components::designer::conflict_dialog::ConflictDialog;
use crate::components::designer::diff_canvas::DiffCanvas;
use crate::components::designer::leave_guard;
use crate::components::designer::palette::Palette;
use crate::components::designer::side_panel::SidePanel;
use crate::components::designer::state::Designer;
use crate::components::designer::toolbar::Toolbar;
use crate::components::error_alert::ErrorAlert;
use crate::designer::editor::Edit;
use crate::designer::keys::{shortcut, Shortcut};
use leptos::ev;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos::wasm_bindgen::JsCast;
use leptos_router::hooks::{use_navigate, use_params_map};
use leptos_router::NavigateOptions;

#[component]
pub fn DesignerPage() -> impl IntoView {
    let params = use_params_map();
    let id = params.with_untracked(|p| p.get("id").unwrap_or_default());
    let d = Designer::new(id);
    provide_context(d);
    d.load();
    let svg = NodeRef::<leptos::svg::Svg>::new();

    // Once the draft is there, show all of it.
    Effect::new(move |_| {
        if d.loaded.get() {
            request_animation_frame(move || {
                let (w, h) = canvas_size(&svg);
                d.board.update(|b| b.fit(w, h));
            });
        }
    });

    let navigate = use_navigate();
    Effect::new(move |_| {
        if d.signed_out.get() {
            navigate("/login", NavigateOptions { replace: true, ..Default::default() });
        }
    });

    let keys = window_event_listener(ev::keydown, move |ev| {
        // Typing in a form is not a shortcut (except Ctrl+S).
        let in_field = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|el| matches!(el.tag_name().to_ascii_lowercase().as_str(), "input" | "textarea" | "select"));
        let ctrl = ev.ctrl_key() || ev.meta_key();
        let Some(action) = shortcut(&ev.key(), ctrl, ev.shift_key()) else { return };
        if in_field && action != Shortcut::Save {
            return;
        }
        if d.diff.with_untracked(Option::is_some) && action != Shortcut::Save {
            return;
        }
        ev.prevent_default();
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
            Shortcut::Fit => {
                let (w, h) = canvas_size(&svg);
                d.board.update(|b| b.fit(w, h));
            }
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

    let me = LocalResource::new(api::me);
    let username = Signal::derive(move || me.get().and_then(Result::ok).map(|me| me.username));
    // Why the edge being drawn would be refused, while it is drawn; otherwise the last message.
    let notice = move || d.board.with(|b| b.refusal.as_ref().map(|r| r.message())).or_else(|| d.notice.get());
    view! {
        <AppHeader username=username />
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
