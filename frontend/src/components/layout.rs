//! The frame around every page behind sign-in, rendered once while the pages inside it change:
//! a skip link past the navigation, the header with who is signed in, the page's title, the one
//! view that load failures show in, and the page itself. It provides the session as context and
//! sends the app to sign-in, with the way back, on any 401.

use crate::api;
use crate::components::app_header::AppHeader;
use crate::components::error_alert::ErrorAlert;
use crate::components::fetch::{show_error, show_errors_in};
use crate::components::session::Session;
use crate::components::title::set_title;
use crate::shell::{page_title, sign_in_page};
use leptos::prelude::*;
use leptos_router::components::Outlet;
use leptos_router::hooks::{use_location, use_navigate};
use leptos_router::NavigateOptions;
use std::rc::Rc;

/// The id of the element the skip link moves the keyboard to.
const CONTENT: &str = "content";

#[component]
pub fn Layout() -> impl IntoView {
    let session = Session::read();
    provide_context(session);
    crate::components::views::ViewsChanged::provide();
    crate::components::approvals::WaitingCount::provide();
    let errors = RwSignal::new(None::<String>);
    show_errors_in(Some(errors));

    let navigate = use_navigate();
    api::on_unauthorized(Some(Rc::new(move || {
        let location = window().location();
        let here = format!("{}{}", location.pathname().unwrap_or_default(), location.search().unwrap_or_default());
        navigate(&sign_in_page(&here), NavigateOptions { replace: true, ..Default::default() });
    })));
    on_cleanup(|| {
        api::on_unauthorized(None);
        show_errors_in(None);
    });

    // A new page: its own title, and no failure of the last one.
    let path = use_location().pathname;
    Effect::new(move |_| {
        set_title(page_title(&path.get()));
        show_error(None);
    });

    let shown = Signal::derive(move || errors.get().or_else(|| session.error().get()));
    // The pages wait for the session: a signed-out visitor goes to sign-in without a page first
    // drawn, loaded and refused (on a slow phone that page cost seconds), and meanwhile the
    // loading view from index.html stays as it was.
    view! {
        <Show when=move || session.settled().get() fallback=Booting>
            <a class="skip-link" href=format!("#{CONTENT}") on:click=skip_to_content>"Skip to content"</a>
            <AppHeader />
            {move || shown.get().is_some().then(|| view! {
                <div class="page-alerts" data-testid="page-error"><ErrorAlert message=shown /></div>
            })}
            <div id=CONTENT tabindex="-1">
                <Outlet />
            </div>
        </Show>
    }
}

/// What shows until the session is known: the same as `static/index.html`'s loading shell, so
/// the app taking over changes nothing on screen.
#[component]
fn Booting() -> impl IntoView {
    view! {
        <main class="page narrow">
            <h1 class="brand">"Trellis"</h1>
            <p class="boot-status" role="status">"Loading…"</p>
        </main>
    }
}

/// Moves focus (and the view) to the page's content, past the navigation.
fn skip_to_content(ev: leptos::ev::MouseEvent) {
    ev.prevent_default();
    if let Some(content) = document().get_element_by_id(CONTENT) {
        content.scroll_into_view();
        if let Some(content) = leptos::wasm_bindgen::JsCast::dyn_ref::<web_sys::HtmlElement>(&content) {
            let _ = content.focus();
        }
    }
}
