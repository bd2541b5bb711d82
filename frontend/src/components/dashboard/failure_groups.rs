//! Failure groups as a table: how many, which workflow and node, the error's class (the newest
//! message on hover), when first and last seen. Each opens as the instances list of its
//! failures; operators can retry a group from it.

use crate::components::table_parts::TableHead;
use crate::format;
use crate::instance_filter::InstanceFilter;
use leptos::prelude::*;
use trellis_model::api::{FailureGroup, FailureReport};
use trellis_model::InstanceStatus;

/// The columns; the dashboard's compact table has the first five.
const COLUMNS: &[(&str, &str)] = &[
    ("Count", "version"),
    ("Workflow", ""),
    ("Node", ""),
    ("Error", ""),
    ("Last seen", "updated"),
    ("First seen", "updated"),
    ("", ""),
];

/// The instances list of a group: its workflow's failed and timed-out instances that failed at
/// its node with its error class (whenever they ended: a retry of the group takes them all).
pub fn group_filter(g: &FailureGroup) -> InstanceFilter {
    InstanceFilter {
        workflow: Some(g.workflow_id.clone()),
        status: vec![InstanceStatus::Failed, InstanceStatus::TimedOut],
        node: g.node.clone(),
        error_class: Some(g.error_class.clone()),
        ..InstanceFilter::default()
    }
}

#[component]
pub fn FailureGroups(
    #[prop(into)] report: Signal<Option<FailureReport>>,
    /// Rows shown at most.
    limit: usize,
    /// Fewer columns, for the dashboard's panel.
    #[prop(optional)]
    compact: bool,
    /// Offered to operators: retry every failure of the group.
    #[prop(optional)]
    on_retry: Option<Callback<InstanceFilter>>,
) -> impl IntoView {
    let rows = move || report.with(|r| r.as_ref().map(|r| r.groups.iter().take(limit).cloned().collect::<Vec<_>>()));
    view! {
        <table class="workflows failures" data-testid="failure-groups">
            <TableHead columns=if compact { &COLUMNS[..5] } else { COLUMNS } />
            <tbody>
                {move || match rows() {
                    None => view! { <tr><td colspan="7" class="empty">"Loading…"</td></tr> }.into_any(),
                    Some(rows) if rows.is_empty() => {
                        view! { <tr><td colspan="7" class="empty">"No failures in this range."</td></tr> }.into_any()
                    }
                    Some(rows) => rows.into_iter().map(|g| view! { <GroupRow g=g on_retry=on_retry compact=compact /> }).collect_view().into_any(),
                }}
            </tbody>
        </table>
    }
}

#[component]
fn GroupRow(g: FailureGroup, on_retry: Option<Callback<InstanceFilter>>, compact: bool) -> impl IntoView {
    let filter = group_filter(&g);
    let list = filter.page();
    let workflow = g.workflow_name.clone().unwrap_or_else(|| g.workflow_id.clone());
    let node = g.node.clone().unwrap_or_else(|| "(instance timeout)".to_owned());
    let sample = g.sample_error.clone().unwrap_or_default();
    view! {
        <tr data-testid="failure-group">
            <td class="version count" data-testid="failure-count">
                {if compact { view! { <a href=list.clone()>{g.count}</a> }.into_any() } else { view! { {g.count} }.into_any() }}
            </td>
            <td class="name">{workflow}</td>
            <td><code>{node}</code></td>
            <td class="error" title=sample>{g.error_class.clone()}</td>
            <td class="updated">{format::timestamp(&g.last_seen)}</td>
            {(!compact).then(|| view! {
            <td class="updated">{format::timestamp(&g.first_seen)}</td>
            <td class="actions">
                <a href=list data-testid="failure-open">"Instances"</a>
                " · "
                <a href=crate::urls::instance_page(&g.sample_instance)>"Newest"</a>
                " · "
                <a href=crate::compare::with_last_success(&g.sample_instance) data-testid="failure-compare"
                    title="The newest failure beside the newest succeeded run of its workflow">"Compare with last success"</a>
                {on_retry.map(|retry| view! {
                    " · "
                    <button type="button" class="link" data-testid="failure-retry" on:click=move |_| retry.run(filter.clone())>
                        "Retry group…"
                    </button>
                })}
            </td>
            })}
        </tr>
    }
}
