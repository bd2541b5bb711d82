//! The live API keys, each with "Revoke"; a key's secret is never shown here, only its prefix.

use crate::components::table_parts::TableHead;
use crate::format;
use leptos::prelude::*;
use trellis_model::api::ApiKey;

const COLUMNS: &[(&str, &str)] =
    &[("Name", ""), ("Key", ""), ("Role", ""), ("Created by", ""), ("Created", "updated"), ("", "")];

#[component]
pub fn KeysTable(
    keys: RwSignal<Vec<ApiKey>>,
    /// The key's id and name.
    on_revoke: Callback<(String, String)>,
) -> impl IntoView {
    view! {
        <table class="workflows" data-testid="keys-table">
            <TableHead columns=COLUMNS />
            <tbody>
                {move || {
                    let list = keys.get();
                    if list.is_empty() {
                        return view! { <tr><td colspan="6" class="empty">"No API keys."</td></tr> }.into_any();
                    }
                    list.into_iter().map(|k| {
                        let (id, label) = (k.id.clone(), k.name.clone());
                        view! {
                            <tr data-testid="key-row">
                                <td class="name">{k.name.clone()}</td>
                                <td><code>{format!("{}…", k.prefix)}</code></td>
                                <td>{k.role.as_str()}</td>
                                <td>{k.created_by.clone().unwrap_or_default()}</td>
                                <td class="updated">{format::timestamp(&k.created_at)}</td>
                                <td class="actions">
                                    <button type="button" class="danger" on:click=move |_| on_revoke.run((id.clone(), label.clone()))>"Revoke"</button>
                                </td>
                            </tr>
                        }
                    }).collect_view().into_any()
                }}
            </tbody>
        </table>
    }
}
