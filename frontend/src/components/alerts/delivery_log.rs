//! A rule's deliveries, newest first: when, what it was about (an instance, linked), how it
//! stands (pending, delivered, failed or suppressed), how its last try went, and how many later
//! repeats it counted instead of sending.

use crate::alert_rules::last_try;
use crate::components::table_parts::TableHead;
use crate::format;
use leptos::prelude::*;
use trellis_model::api::AlertDelivery;

const COLUMNS: &[(&str, &str)] =
    &[("Created", "updated"), ("Event", ""), ("Instance", ""), ("Status", ""), ("Last try", ""), ("Repeats", "")];

#[component]
pub fn DeliveryLog(list: Vec<AlertDelivery>) -> impl IntoView {
    if list.is_empty() {
        return view! { <p class="muted" data-testid="alert-log-empty">"Nothing delivered yet. “Send test” posts one now."</p> }
            .into_any();
    }
    view! {
        <table class="workflows deliveries" data-testid="alert-log">
            <TableHead columns=COLUMNS />
            <tbody>
                {list.into_iter().map(|d| view! {
                    <tr data-testid="alert-delivery" data-status=d.status.as_str()>
                        <td class="updated">{format::timestamp(&d.created_at)}</td>
                        <td>{d.event.as_str().replace('_', " ")}</td>
                        <td>{d.instance_id.clone().map(|i| view! {
                            <a class="mono" href=crate::urls::instance_page(&i)>{i.chars().take(8).collect::<String>()}</a>
                        })}</td>
                        <td data-testid="alert-delivery-status">{d.status.as_str()}</td>
                        <td class="error">{last_try(&d)}</td>
                        <td>{(d.suppressed > 0).then(|| d.suppressed.to_string())}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
