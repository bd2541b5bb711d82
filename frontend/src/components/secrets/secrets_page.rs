//! The Secrets page: the form to add one (admins), the list with where each is used, and what
//! the last action did or why the API refused it.

use super::secret_form::SecretForm;
use super::secret_row::SecretRow;
use crate::api_secrets;
use crate::components::error_alert::ErrorAlert;
use crate::components::fetch::{load, Loading};
use crate::components::outcome::Outcome;
use crate::components::session::use_session;
use crate::components::table_parts::TableHead;
use leptos::prelude::*;
use trellis_model::api::Secret;
use trellis_model::Role;

const COLUMNS: &[(&str, &str)] =
    &[("Name", ""), ("Description", ""), ("Used by", ""), ("Updated", "updated"), ("", "")];

#[component]
pub fn SecretsPage() -> impl IntoView {
    let secrets = RwSignal::new(None::<Vec<Secret>>);
    let outcome = Outcome::new();
    let (error, notice) = (outcome.error, outcome.notice);
    let reload = move || load(api_secrets::list_secrets(), move |list| secrets.set(Some(list)));
    reload();
    let on_done = Callback::new(move |said: Result<String, String>| {
        outcome.show(said);
        reload();
    });
    let admin = Signal::derive(move || use_session().role().get() == Some(Role::Admin));
    view! {
        <main class="page wide">
            <div class="toolbar"><h1>"Secrets"</h1></div>
            <p class="muted">
                "Reference one in a node's settings as " <code>"{{ secret.NAME }}"</code>
                ". Its value is encrypted, sent only in the call that needs it, and shown nowhere: not here, \
                 not in outputs, history or logs, where it reads "<code>"[secret:NAME]"</code>"."
                {move || (!admin.get()).then_some(" Only admins add, rotate or delete secrets.")}
            </p>
            <ErrorAlert message=error />
            {move || notice.get().map(|n| view! { <p class="notice" role="status" data-testid="secrets-notice">{n}</p> })}
            {move || admin.get().then(|| view! { <SecretForm on_done=on_done /> })}
            <table class="workflows secrets" data-testid="secrets-table">
                <TableHead columns=COLUMNS />
                <tbody>{move || rows(secrets.get(), admin, on_done)}</tbody>
            </table>
        </main>
    }
}

fn rows(list: Option<Vec<Secret>>, admin: Signal<bool>, on_done: Callback<Result<String, String>>) -> AnyView {
    match list {
        None => view! { <tr><td colspan="5" class="empty"><Loading /></td></tr> }.into_any(),
        Some(list) if list.is_empty() => {
            view! { <tr><td colspan="5" class="empty">"No secrets yet."</td></tr> }.into_any()
        }
        Some(list) => list
            .into_iter()
            .map(|secret| view! { <SecretRow secret=secret admin=admin on_done=on_done /> })
            .collect_view()
            .into_any(),
    }
}
