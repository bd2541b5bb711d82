//! Asks before an in-app link leaves the designer with unsaved changes. The router follows links
//! from a click listener on the window, so this listens on the document while capturing, which
//! runs first, and cancels the click when the user chooses to stay.

use leptos::prelude::*;
use leptos::wasm_bindgen::closure::Closure;
use leptos::wasm_bindgen::JsCast;
use std::cell::RefCell;

type Listener = Closure<dyn Fn(web_sys::MouseEvent)>;

thread_local! {
    static GUARD: RefCell<Option<Listener>> = const { RefCell::new(None) };
}

/// Installs the guard; `dirty` says whether there is anything to lose. Removed with [`remove`].
pub fn install(dirty: impl Fn() -> bool + 'static) {
    let listener = Listener::new(move |ev: web_sys::MouseEvent| {
        let on_link = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|el| el.closest("a[href]").ok().flatten())
            .is_some();
        if on_link && dirty() && !window().confirm_with_message("Leave without saving your changes?").unwrap_or(true) {
            ev.prevent_default();
        }
    });
    let _ = document().add_event_listener_with_callback_and_bool("click", listener.as_ref().unchecked_ref(), true);
    remove();
    GUARD.with(|g| *g.borrow_mut() = Some(listener));
}

pub fn remove() {
    GUARD.with(|g| {
        if let Some(listener) = g.borrow_mut().take() {
            let _ = document().remove_event_listener_with_callback_and_bool(
                "click",
                listener.as_ref().unchecked_ref(),
                true,
            );
        }
    });
}
