//! One saved view in the menu: its name (cut with an ellipsis when long, whole on hover), "shared"
//! when it is, its live count, and a delete button for its owner and for admins.

use super::ViewsChanged;
use crate::api_views;
use crate::components::fetch::show_error;
use crate::components::session::use_session;
use leptos::prelude::*;
use leptos::task::spawn_local;
use trellis_model::api::SavedView;
use trellis_model::Role;

#[component]
pub fn ViewItem(saved: SavedView, #[prop(into)] count: Signal<Option<i64>>) -> impl IntoView {
    let (me, role) = (use_session().user_id(), use_session().role());
    let owner_id = saved.owner.id.clone();
    let may_delete = move || me.get().as_deref() == Some(owner_id.as_str()) || role.get() == Some(Role::Admin);
    let SavedView { id, name, path, shared, owner, .. } = saved;
    let label = format!("Delete the view “{name}”");
    let question = format!("Delete the view “{name}”?{}", if shared { " Everyone loses it." } else { "" });
    let changed = ViewsChanged::here();
    let delete = move |_| {
        if !window().confirm_with_message(&question).unwrap_or(false) {
            return;
        }
        let id = id.clone();
        spawn_local(async move {
            match api_views::delete_view(&id).await {
                Ok(()) => ViewsChanged::notify(changed),
                Err(err) => show_error(Some(err.message())),
            }
        });
    };
    let by = format!("shared by {}", owner.name);
    view! {
        <li class="view-item" data-testid="view-item">
            <a href=path class="view-name" title=name.clone() data-testid="view-link">{name.clone()}</a>
            {shared.then(|| view! { <span class="badge" title=by>"shared"</span> })}
            <span class="view-count" data-testid="view-count" aria-label="instances shown">
                {move || count.get().map_or("…".to_owned(), |n| n.to_string())}
            </span>
            <Show when=may_delete>
                <button type="button" class="link danger" aria-label=label.clone() data-testid="view-delete" on:click=delete.clone()>"×"</button>
            </Show>
        </li>
    }
}
