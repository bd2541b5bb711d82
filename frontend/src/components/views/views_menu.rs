//! "Views" in the header: a menu of the caller's saved views and everyone's shared ones, each with
//! how many instances it shows now. Counted only while the menu is open, then again whenever the
//! dashboard feed says a run changed (at most every 2 s), so a closed menu costs nothing.

use super::view_item::ViewItem;
use super::ViewsChanged;
use crate::api_views;
use crate::components::fetch::{load, Loading};
use crate::components::run::stream::follow_feed;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::use_location;
use std::collections::HashMap;
use std::time::Duration;
use trellis_model::api::SavedView;
use trellis_model::trace::EventKind;

/// Counts are reread at most this often while runs change.
const RECOUNT: Duration = Duration::from_secs(2);

#[component]
pub fn ViewsMenu() -> impl IntoView {
    let open = RwSignal::new(false);
    let location = use_location();
    // Following a view (or any link) closes the menu.
    Effect::new(move |_| {
        location.pathname.track();
        location.search.track();
        open.set(false);
    });
    view! {
        <div class="views-menu">
            <button type="button" class="link" data-testid="views-menu" aria-expanded=move || open.get().to_string()
                aria-controls="saved-views" on:click=move |_| open.update(|o| *o = !*o)>
                "Views ▾"
            </button>
            <Show when=move || open.get()>
                <ViewsList />
            </Show>
        </div>
    }
}

#[component]
fn ViewsList() -> impl IntoView {
    let views = RwSignal::new(None::<Vec<SavedView>>);
    let counts = RwSignal::new(HashMap::<String, i64>::new());
    let counting = StoredValue::new(false);
    let recount = move || {
        if counting.get_value() {
            return false;
        }
        counting.set_value(true);
        let paths: Vec<String> = views.with_untracked(|v| v.iter().flatten().map(|v| v.path.clone()).collect());
        spawn_local(async move {
            for path in paths {
                if let Ok(Some(n)) = api_views::view_count(&path).await {
                    counts.update(|c| {
                        c.insert(path, n);
                    });
                }
            }
            counting.set_value(false);
        });
        true
    };
    Effect::new(move |_| {
        ViewsChanged::track();
        load(api_views::list_views(), move |list| {
            views.set(Some(list));
            recount();
        });
    });
    follow_feed(move |entry| entry.kind() == Some(EventKind::Instance), RECOUNT, recount);
    view! {
        <div class="views-list" id="saved-views" role="region" aria-label="Saved views" data-testid="views-list">
            {move || match views.get() {
                None => view! { <Loading /> }.into_any(),
                Some(list) if list.is_empty() => view! {
                    <p class="empty" data-testid="views-empty">
                        "No saved views yet. Filter the "<a href="/instances">"instances"</a>", then “Save view”."
                    </p>
                }.into_any(),
                Some(list) => view! {
                    <ul>
                        {list.into_iter().map(|v| {
                            let path = v.path.clone();
                            let count = Signal::derive(move || counts.with(|c| c.get(&path).copied()));
                            view! { <ViewItem saved=v count=count /> }
                        }).collect_view()}
                    </ul>
                }.into_any(),
            }}
        </div>
    }
}
