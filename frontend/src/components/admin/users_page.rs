//! `/users` (admins): every user with their role and state; add one, change a role, reset a
//! password, disable or enable, delete; and the API keys below. Every refusal shows the API's
//! `detail` (the last admin, yourself). With single sign-on, where each user signs in, their
//! groups, and a preview of what role the group mapping gives.

use super::api_keys_panel::ApiKeysPanel;
use super::mapping_preview::MappingPreviewPanel;
use super::role_select::RoleSelect;
use super::user_row::UserRow;
use crate::api_admin;
use crate::components::error_alert::ErrorAlert;
use crate::components::fetch::load;
use crate::components::mutation::Mutation;
use crate::components::table_parts::TableHead;
use leptos::prelude::*;
use trellis_model::api::{CreateUser, UserView};
use trellis_model::Role;

/// The roles, least to most.
pub const ROLES: &[Role] = Role::ALL;
const COLUMNS: &[(&str, &str)] = &[
    ("Username", ""),
    ("Role", ""),
    ("Signs in with", ""),
    ("Groups", "groups"),
    ("State", ""),
    ("Created", "updated"),
    ("", ""),
];

#[component]
pub fn UsersPage() -> impl IntoView {
    let users = RwSignal::new(None::<Vec<UserView>>);
    let error = RwSignal::new(None::<String>);
    let notice = RwSignal::new(None::<String>);
    let reload = move || load(api_admin::list_users(), move |list| users.set(Some(list)));
    reload();
    let refresh = Callback::new(move |said: Result<String, String>| {
        match said {
            Ok(text) => {
                error.set(None);
                notice.set(Some(text));
            }
            Err(text) => {
                notice.set(None);
                error.set(Some(text));
            }
        }
        reload();
    });

    let (username, password, role) =
        (RwSignal::new(String::new()), RwSignal::new(String::new()), RwSignal::new("viewer".to_owned()));
    let adding = Mutation::new();
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let body = CreateUser {
            username: username.get_untracked(),
            password: password.get_untracked(),
            role: role.get_untracked(),
        };
        adding.settle(async move { api_admin::create_user(&body).await }, move |said| match said {
            Ok(me) => {
                username.set(String::new());
                password.set(String::new());
                refresh.run(Ok(format!("Added {} as {}.", me.username, me.role)));
            }
            Err(e) => refresh.run(Err(e.message())),
        });
    };

    view! {
        <main class="page wide">
            <div class="toolbar"><h1>"Users"</h1></div>
            <ErrorAlert message=error />
            {move || notice.get().map(|n| view! { <p class="notice" role="status" data-testid="users-notice">{n}</p> })}
            <form class="inline-form" aria-label="Add a user" on:submit=add>
                <label>"Username " <input required data-testid="new-username" prop:value=username on:input=move |ev| username.set(event_target_value(&ev)) /></label>
                <label>"Password " <input type="password" required minlength="12" data-testid="new-password" prop:value=password on:input=move |ev| password.set(event_target_value(&ev)) /></label>
                <RoleSelect test_id="new-role" role=role />
                <button type="submit" class="primary">"Add user"</button>
            </form>
            <table class="workflows users" data-testid="users-table">
                <TableHead columns=COLUMNS />
                <tbody>
                    {move || users.get().map(|list| list.into_iter().map(|u| view! { <UserRow user=u on_done=refresh /> }).collect_view())}
                </tbody>
            </table>
            <MappingPreviewPanel />
            <ApiKeysPanel />
        </main>
    }
}
