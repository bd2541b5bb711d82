//! One approval in the inbox: its question (linking to its page), its status and how far it got,
//! the run it stops (linking to the run view), the node, when it was asked and when it times out.

use crate::approvals::{ago, due_in, progress, status_words};
use crate::format;
use crate::urls;
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use trellis_model::api::Approval;

#[component]
pub fn ApprovalRow(
    approval: Approval,
    /// Who is signed in: the progress says what they decided.
    me: Option<String>,
    /// The browser's clock when the list was read, for "5 min ago".
    now: DateTime<Utc>,
) -> impl IntoView {
    let a = approval;
    let id = a.id.to_string();
    let asked = format::rfc3339(&a.created_at);
    // A closed approval waits for nobody: its due time no longer matters.
    let due = match (a.status.is_open(), &a.due_at) {
        (true, Some(due)) => {
            let exact = format::rfc3339(due);
            view! { <time datetime=exact.clone() title=exact>{due_in(due, now)}</time> }.into_any()
        }
        _ => view! { <span class="muted">"—"</span> }.into_any(),
    };
    let status = a.status.as_str();
    view! {
        <tr data-testid="approval-row" data-id=id.clone() data-status=status>
            <td class="name"><a href=urls::approval_page(&id) data-testid="approval-open">{a.title.clone()}</a></td>
            <td><span class=format!("approval-status approval-{status}")>{status_words(a.status)}</span></td>
            <td class="progress" data-testid="approval-progress">{progress(&a, me.as_deref())}</td>
            <td class="workflow"><a href=urls::instance_page(&a.instance_id.to_string())>{a.workflow_name.clone()}</a></td>
            <td class="node"><code>{a.node.clone()}</code></td>
            <td class="updated"><time datetime=asked.clone() title=asked>{ago(&a.created_at, now)}</time></td>
            <td class="updated">{due}</td>
        </tr>
    }
}
