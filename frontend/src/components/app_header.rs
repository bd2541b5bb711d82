//! The bar across the top: the app name, the sections the signed-in role may use (`pages.rs`),
//! the saved views' menu, the approvals waiting for the signed-in person, who is signed in with
//! which role, and the way out. On a narrow screen (static/phone.css) the sections fold behind a "Menu"
//! button, a disclosure: it opens and closes them, Escape closes them and returns to it, following a
//! link closes them.

use crate::api;
use crate::components::approvals::approvals_link::ApprovalsLink;
use crate::components::error_alert::ErrorAlert;
use crate::components::mutation::Mutation;
use crate::components::session::use_session;
use crate::components::views::views_menu::ViewsMenu;
use crate::pages::{section_holds, sections};
use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_navigate};
use leptos_router::NavigateOptions;
use trellis_model::Role;

/// More sections than this crowd the header at 1280 px (an editor has 8, an admin 12).
const CROWDED: usize = 8;

#[component]
pub fn AppHeader() -> impl IntoView {
    let navigate = use_navigate();
    let error = RwSignal::new(None::<String>);
    let path = use_location().pathname;
    let session = use_session();
    let role = session.role();
    let menu_open = RwSignal::new(false);
    let menu_button = NodeRef::<leptos::html::Button>::new();
    // Following a link (any change of page) folds the sections away again.
    Effect::new(move |_| {
        path.track();
        menu_open.set(false);
    });
    let close_on_escape = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Escape" && menu_open.get_untracked() {
            menu_open.set(false);
            if let Some(button) = menu_button.get_untracked() {
                let _ = button.focus();
            }
        }
    };

    let signing_out = Mutation::reporting_to(error);
    let sign_out = move |_| {
        let navigate = navigate.clone();
        signing_out.settle(api::logout(), move |said| {
            match said {
                // A single sign-on session signs out at the provider too, which comes back to /login.
                Ok(Some(end_session_url)) => {
                    let _ = window().location().set_href(&end_session_url);
                }
                // A 401 means the session was already gone: signed out either way.
                Err(err) if !err.is_unauthorized() => error.set(Some(err.message())),
                _ => navigate("/login", NavigateOptions { replace: true, ..Default::default() }),
            }
        });
    };

    let link = move |(label, href): (&'static str, &'static str)| {
        let current = move || section_holds(href, &path.get()).then_some("page");
        view! { <a href=href aria-current=current>{label}</a> }
    };
    // The sections of `pages.rs` the signed-in role may use.
    let nav = move || sections(role.get()).map(link).collect_view();
    // An admin's dozen sections fill a 1280 px header: they sit closer together then, and the
    // approvals link shows its icon for its label (style.css), so the header stays one line.
    let crowded = move || sections(role.get()).count() > CROWDED;

    view! {
        <header class="app-header" class:crowded=crowded>
            <a class="brand" href="/">"Trellis"</a>
            <button type="button" class="menu-button" node_ref=menu_button data-testid="menu-button"
                aria-expanded=move || menu_open.get().to_string() aria-controls="sections"
                on:click=move |_| menu_open.update(|o| *o = !*o)>
                "Menu"
            </button>
            <nav id="sections" class="sections" class:open=move || menu_open.get() aria-label="Sections"
                on:keydown=close_on_escape>
                {nav} <ViewsMenu />
            </nav>
            <div class="session">
                <ErrorAlert message=error />
                <ApprovalsLink />
                <span class="username" data-testid="username">{move || session.username().get()}</span>
                <span class="role" data-testid="role">{move || role.get().map(Role::as_str)}</span>
                <button type="button" on:click=sign_out>"Sign out"</button>
            </div>
        </header>
    }
}
