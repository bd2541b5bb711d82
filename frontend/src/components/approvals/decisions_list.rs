//! Who decided so far: each person's decision, when, their comment, and their answer to the
//! form, in the order they came.

use crate::approvals::ago;
use crate::components::json_block::JsonBlock;
use crate::components::run::node_details::pretty;
use crate::components::run::state::browser_now;
use crate::format;
use leptos::prelude::*;
use trellis_model::api::ApprovalDecision;

#[component]
pub fn DecisionsList(decisions: Vec<ApprovalDecision>) -> impl IntoView {
    let now = browser_now();
    if decisions.is_empty() {
        return view! {
            <section class="approval-decisions" aria-labelledby="decisions-title">
                <h2 id="decisions-title">"Decisions"</h2>
                <p class="muted" data-testid="no-decisions">"Nobody has decided yet."</p>
            </section>
        }
        .into_any();
    }
    let items = decisions
        .into_iter()
        .map(|d| {
            let exact = format::rfc3339(&d.at);
            let answer = (!d.response.is_null()).then(|| view! { <JsonBlock text=pretty(&d.response) /> });
            view! {
                <li class="decision" data-testid="decision" data-user=d.user.clone()>
                    <p class="decision-line">
                        <strong>{d.user.clone()}</strong> " "
                        <span class=format!("approval-status approval-{}", d.decision)>{d.decision.clone()}</span> " "
                        <time class="muted" datetime=exact.clone() title=exact>{ago(&d.at, now)}</time>
                    </p>
                    {d.comment.clone().map(|c| view! { <blockquote class="decision-comment">{c}</blockquote> })}
                    {answer}
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="approval-decisions" aria-labelledby="decisions-title">
            <h2 id="decisions-title">"Decisions"</h2>
            <ol class="decisions">{items}</ol>
        </section>
    }
    .into_any()
}
