//! `/approvals/:id`: one approval. The question and where it stands, who decided what so far,
//! and — for someone who may decide now — the answer form with Approve and Reject; beside it
//! the run it stops, drawn live, with what the earlier nodes produced. An id the server does not
//! know (or hides from the caller) shows "No such approval".

use super::approval_facts::ApprovalFacts;
use super::approval_run::ApprovalRun;
use super::decision_form::DecisionForm;
use super::decisions_list::DecisionsList;
use super::WaitingCount;
use crate::api_approvals;
use crate::approvals::{progress, why_not};
use crate::components::error_alert::ErrorAlert;
use crate::components::fetch::{load_or, Loading};
use crate::components::session::use_session;
use crate::components::title::{set_title, title_by_workflow};
use crate::urls::APPROVALS_PAGE;
use leptos::prelude::*;
use trellis_model::api::Approval;

#[component]
pub fn ApprovalPage(id: String) -> impl IntoView {
    let approval = RwSignal::new(None::<Approval>);
    let missing = RwSignal::new(false);
    // Why the approval could not be read (other than not existing): said instead of "Loading…".
    let failed = RwSignal::new(None::<String>);
    let notice = RwSignal::new(None::<String>);
    // A decision refused because the approval moved on (409): said above the page, which
    // shows where it stands now.
    let stale = RwSignal::new(None::<String>);
    let me = use_session().username();
    let waiting = WaitingCount::here();
    let key = StoredValue::new(id.clone());
    let reload = move || {
        let id = key.get_value();
        let call = async move { api_approvals::get(&id).await };
        load_or(
            call,
            move |a| {
                failed.set(None);
                approval.set(Some(a));
            },
            move |err| match err.is_not_found() {
                true => missing.set(true),
                false => failed.set(Some(format!("The approval could not be read: {}", err.message()))),
            },
        );
    };
    reload();
    // The tab is named by the question once it is known.
    title_by_workflow("Approval", move || approval.with(|a| a.as_ref().map(|a| a.title.clone())));
    let decided = Callback::new(move |a: Approval| {
        stale.set(None);
        notice.set(Some(format!("Your decision is recorded. {}.", progress(&a, None))));
        approval.set(Some(a));
        if let Some(w) = waiting {
            w.recount();
        }
    });
    // What changed elsewhere (another approver, the timer, the run) shows without a reload; what
    // this page's last decision did is old news then.
    let changed = Callback::new(move |()| {
        if approval.with_untracked(|a| a.as_ref().is_some_and(|a| a.status.is_open())) {
            notice.set(None);
            reload();
        }
    });
    // The run is drawn once per page: a new decision redraws the answer side only.
    let run = Memo::new(move |_| approval.with(|a| a.as_ref().map(|a| (a.instance_id.to_string(), a.node.clone()))));
    let answer = move || {
        approval.get().map(|a| {
            let me = me.get_untracked();
            let form = a.can_decide.then(|| {
                let on_stale = Callback::new(move |said: String| {
                    stale.set(Some(said));
                    reload();
                });
                view! { <DecisionForm approval=a.clone() on_decided=decided on_stale=on_stale /> }
            });
            let why = why_not(&a, me.as_deref())
                .map(|why| view! { <p class="cannot-decide" data-testid="cannot-decide">{why}</p> });
            view! {
                <ApprovalFacts approval=a.clone() />
                <DecisionsList decisions=a.decisions.clone() />
                {form}
                {why}
            }
        })
    };
    let not_found = move || view! { <NoSuchApproval id=key.get_value() /> };
    view! {
        <Show when=move || !missing.get() fallback=not_found>
            <main class="page wide approval-page">
                <p class="breadcrumb"><a href=APPROVALS_PAGE>"← Approvals"</a></p>
                {move || (approval.with(Option::is_none) && failed.with(Option::is_none)).then(|| view! { <Loading /> })}
                <ErrorAlert message=failed />
                {move || notice.get().map(|n| view! { <p class="notice" role="status" data-testid="decision-notice">{n}</p> })}
                <ErrorAlert message=stale />
                <div class="approval-columns">
                    <div class="approval-answer">{answer}</div>
                    {move || run.get().map(|(instance, node)| view! {
                        <ApprovalRun instance=instance node=node on_node_change=changed />
                    })}
                </div>
            </main>
        </Show>
    }
}

/// What the page shows for an id the server does not know.
#[component]
fn NoSuchApproval(id: String) -> impl IntoView {
    set_title("No such approval");
    view! {
        <main class="page narrow" data-testid="no-such-approval">
            <h1>"No such approval"</h1>
            <p>"There is no approval with the id " <code class="clip" title=id.clone()>{id.clone()}</code>
                ". Its run may have been removed by retention, or the link is mistyped."</p>
            <p><a href=APPROVALS_PAGE>"All approvals"</a></p>
        </main>
    }
}
