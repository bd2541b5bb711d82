//! Loading what a page shows: one call that runs a request and hands its value on, one view the
//! failures of such loads show in (the layout's, above the page), and one way to say "loading".
//! A 401 never gets here as an error to show: `api::send` has sent the app to sign-in.

use crate::error::ApiError;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::cell::Cell;
use std::future::Future;

thread_local! {
    /// The shared error view's message, registered by the layout.
    static SHOWN: Cell<Option<RwSignal<Option<String>>>> = const { Cell::new(None) };
}

/// Makes `message` the signal the shared error view shows (the layout, once).
pub fn show_errors_in(message: Option<RwSignal<Option<String>>>) {
    SHOWN.with(|s| s.set(message));
}

/// Shows (or with `None` clears) the message of the shared error view.
pub fn show_error(message: Option<String>) {
    if let Some(shown) = SHOWN.with(Cell::get) {
        shown.try_set(message);
    }
}

/// Runs `call` and hands its value to `done`. A failure shows its problem's `detail` in the
/// shared error view; a later success clears it.
pub fn load<T: 'static>(call: impl Future<Output = Result<T, ApiError>> + 'static, done: impl FnOnce(T) + 'static) {
    load_or(call, done, |_| {});
}

/// `load`, with `failed` told of a failure too (to stop a spinner, to keep a state).
pub fn load_or<T: 'static>(
    call: impl Future<Output = Result<T, ApiError>> + 'static,
    done: impl FnOnce(T) + 'static,
    failed: impl FnOnce(&ApiError) + 'static,
) {
    spawn_local(async move {
        match call.await {
            Ok(value) => {
                show_error(None);
                done(value);
            }
            Err(err) => {
                failed(&err);
                if !err.is_unauthorized() {
                    show_error(Some(err.message()));
                }
            }
        }
    });
}

/// What every page shows while its content is on the way.
#[component]
pub fn Loading() -> impl IntoView {
    view! { <span class="loading" role="status">"Loading…"</span> }
}
