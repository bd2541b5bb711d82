//! The decision of someone who may decide now: the approval's answer form (its JSON Schema drawn
//! by the Run dialog's renderer, `run_input::fields`), a comment, and Approve or Reject. A
//! refusal says why: 403 not theirs to decide, 413 the comment or the answer, 422 the answer (each problem at
//! its field); a 409 (decided or closed meanwhile) goes to the page, which reads it again.

use crate::api_approvals;
use crate::approvals::{comment_problem, decision_problem, FORM_PROBLEM};
use crate::components::designer::json_input::JsonInput;
use crate::components::mutation::Mutation;
use crate::components::run_input::fields::{field_view, FormState};
use crate::components::run_input::unplaced;
use crate::error::ApiError;
use crate::run_form::{self, FormField};
use leptos::prelude::*;
use serde_json::Value;
use trellis_model::api::{Approval, DecisionRequest, Verdict};
use trellis_model::Issue;

/// How the answer is typed: fields drawn from the schema, a JSON box for a schema the form
/// cannot draw, or nothing when the node asks no answer.
#[derive(Clone)]
enum Answer {
    Form(FormField),
    Json,
    None,
}

#[component]
pub fn DecisionForm(
    approval: Approval,
    on_decided: Callback<Approval>,
    /// A 409, with what it means: the page reads the approval again and says so.
    on_stale: Callback<String>,
) -> impl IntoView {
    let answer = match approval.form.as_ref() {
        Some(schema) => run_form::form(schema).map_or(Answer::Json, Answer::Form),
        None => Answer::None,
    };
    let start = match &answer {
        Answer::Form(root) => run_form::initial(root),
        _ => Value::Null,
    };
    let untouched = StoredValue::new(start.clone());
    let st = FormState { input: RwSignal::new(start), errors: RwSignal::new(Vec::<Issue>::new()) };
    let json_text = RwSignal::new(String::new());
    let comment = RwSignal::new(String::new());
    let comment_error = RwSignal::new(None::<String>);
    let message = RwSignal::new(None::<String>);
    let sending = Mutation::new();
    let id = StoredValue::new(approval.id.to_string());
    let shape = StoredValue::new(answer.clone());

    // The answer as it will be sent, or why it cannot be.
    let response = move || -> Result<Option<Value>, String> {
        match shape.get_value() {
            Answer::Form(_) => Ok(Some(st.input.get_untracked())),
            Answer::Json => match json_text.get_untracked().trim() {
                "" => Ok(None),
                text => serde_json::from_str(text).map(Some).map_err(|e| format!("The answer is not valid JSON: {e}")),
            },
            Answer::None => Ok(None),
        }
    };
    let refused = move |err: ApiError| {
        let said = decision_problem(&err);
        let ApiError::Problem(p) = &err else { return message.set(Some(said)) };
        match p.status {
            409 => return on_stale.run(said),
            // The comment or the answer: the server's detail names which.
            413 if p.detail.as_deref().is_some_and(|d| d.contains("comment")) => comment_error.set(Some(said.clone())),
            // Said while any field is marked: editing a field clears its mark, and the last
            // one cleared takes the sentence with it.
            422 if !p.errors.is_empty() => return st.errors.set(p.errors.clone()),
            _ => {}
        }
        message.set(Some(said));
    };
    let send = move |verdict: Verdict| {
        message.set(None);
        st.errors.set(Vec::new());
        comment_error.set(comment_problem(&comment.get_untracked()));
        if comment_error.with_untracked(Option::is_some) {
            return;
        }
        // The answer goes with either verdict and is held to the form. Saying no needs no
        // form filled in: a rejection leaves out a form nobody touched, and an answer box that
        // does not parse.
        let response = match (response(), verdict) {
            (Ok(Some(r)), Verdict::Reject) if untouched.with_value(|u| *u == r) => None,
            (Ok(r), _) => r,
            (Err(_), Verdict::Reject) => None,
            (Err(why), Verdict::Approve) => return message.set(Some(why)),
        };
        let typed = comment.get_untracked();
        let comment = Some(typed.trim().to_owned()).filter(|c| !c.is_empty());
        let body = DecisionRequest { decision: verdict, response, comment };
        sending.settle(async move { api_approvals::decide(&id.get_value(), &body).await }, move |said| match said {
            Ok(a) => on_decided.run(a),
            Err(err) => refused(err),
        });
    };

    let shown_problem =
        move || message.get().or_else(|| st.errors.with(|e| !e.is_empty()).then(|| FORM_PROBLEM.to_owned()));
    let fields = match answer {
        Answer::Form(root) => {
            let shown = Some(root.clone());
            view! {
                <div class="run-form" data-testid="decision-answer">{field_view(root, String::new(), st)}</div>
                {unplaced(st, shown)}
            }
            .into_any()
        }
        Answer::Json => view! {
            <JsonInput label="Answer (JSON)" rows="5" test_id="decision-answer-json" text=json_text />
            {unplaced(st, None)}
        }
        .into_any(),
        Answer::None => ().into_any(),
    };
    view! {
        <section class="decision-form" aria-labelledby="decide-title" data-testid="decision-form">
            <h2 id="decide-title">"Your decision"</h2>
            {fields}
            <div class="field" class:has-problem=move || comment_error.with(Option::is_some)>
                <label class="field-label" for="decision-comment">"Comment"</label>
                <textarea id="decision-comment" rows="3" data-testid="decision-comment"
                    aria-describedby="decision-comment-help decision-comment-error"
                    prop:value=move || comment.get() on:input=move |ev| comment.set(event_target_value(&ev))></textarea>
                <span class="hint" id="decision-comment-help">"Optional. Kept with your decision; everyone who can see this approval reads it."</span>
                <span class="field-problem" id="decision-comment-error" role="alert" hidden=move || comment_error.with(Option::is_none)>
                    {move || comment_error.get()}
                </span>
            </div>
            {move || shown_problem().map(|m| view! { <p class="alert" role="alert" data-testid="decision-problem">{m}</p> })}
            <div class="decision-buttons">
                <button type="button" class="primary" data-testid="approve" disabled=sending.pending()
                    on:click=move |_| send(Verdict::Approve)>"Approve"</button>
                <button type="button" class="danger" data-testid="reject" disabled=sending.pending()
                    on:click=move |_| send(Verdict::Reject)>"Reject"</button>
            </div>
        </section>
    }
}
