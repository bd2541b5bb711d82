//! "Save view" on the instances list: names the list as it is filtered now and saves it, private
//! or (for operators and above, as the server allows) shared with everyone. Errors (a name taken,
//! too long) show in the form.

use super::ViewsChanged;
use crate::api_views;
use crate::components::error_alert::ErrorAlert;
use crate::components::mutation::Mutation;
use crate::components::session::use_session;
use crate::saved_views::{entered_name, path_of, MAX_NAME_CHARS};
use leptos::prelude::*;
use leptos_router::hooks::use_location;
use trellis_model::api::CreateView;

#[component]
pub fn SaveViewForm() -> impl IntoView {
    let open = RwSignal::new(false);
    let name = RwSignal::new(String::new());
    let shared = RwSignal::new(false);
    let saved = RwSignal::new(None::<String>);
    let save = Mutation::new();
    let search = use_location().search;
    let may_share = use_session().may_act();

    let changed = ViewsChanged::here();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = match entered_name(&name.get_untracked()) {
            Ok(n) => CreateView { name: n, path: path_of(&search.get_untracked()), shared: shared.get_untracked() },
            Err(why) => return save.fail(Some(why)),
        };
        save.run(async move { api_views::create_view(&body).await }, move |view| {
            open.set(false);
            name.set(String::new());
            saved.set(Some(format!("Saved “{}”: it is in Views, at the top.", view.name)));
            ViewsChanged::notify(changed);
        });
    };
    view! {
        <div class="save-view">
            <Show when=move || !open.get()>
                <button type="button" data-testid="save-view" on:click=move |_| { saved.set(None); open.set(true) }>"Save view…"</button>
                {move || saved.get().map(|text| view! { <span class="muted" role="status">{text}</span> })}
            </Show>
            <Show when=move || open.get()>
                <form class="save-view-form" data-testid="save-view-form" on:submit=submit>
                    <label>"Name"
                        <input type="text" data-testid="view-name" maxlength=MAX_NAME_CHARS.to_string() required
                            prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev)) />
                    </label>
                    <Show when=move || may_share.get()>
                        <label class="inline"><input type="checkbox" data-testid="view-shared"
                            prop:checked=move || shared.get() on:change=move |ev| shared.set(event_target_checked(&ev)) />
                            " Share with everyone"</label>
                    </Show>
                    <button type="submit" class="primary" disabled=save.pending()>"Save"</button>
                    <button type="button" on:click=move |_| { save.fail(None); open.set(false) }>"Cancel"</button>
                    <ErrorAlert message=save.error() />
                </form>
            </Show>
        </div>
    }
}
