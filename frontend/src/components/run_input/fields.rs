//! One control per field of the run form, built recursively: nested objects are fieldsets,
//! arrays rows with Add/Remove. Each control reads and writes its place (a JSON Pointer) in the
//! one input value, and shows the violations the server named for it.

use crate::run_form::{self, FormField, Kind};
use leptos::prelude::*;
use serde_json::Value;
use trellis_model::Issue;

#[derive(Clone, Copy)]
pub struct FormState {
    pub input: RwSignal<Value>,
    /// The last refused start's violations.
    pub errors: RwSignal<Vec<Issue>>,
}

/// An element id for the field at `at`.
fn dom_id(at: &str) -> String {
    let safe: String = at.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("run-field{safe}")
}

pub fn field_view(f: FormField, at: String, st: FormState) -> AnyView {
    match f.kind.clone() {
        Kind::Object(children) => object_view(f, children, at, st),
        Kind::Array(item) => array_view(f, *item, at, st),
        _ => leaf_view(f, at, st),
    }
}

fn errors_at(st: FormState, at: String) -> Signal<Vec<String>> {
    Signal::derive(move || {
        st.errors.with(|all| {
            all.iter()
                .filter(|i| run_form::violation_target(i.path.as_deref().unwrap_or(""), &i.message) == at)
                .map(|i| run_form::without_path(i.path.as_deref().unwrap_or(""), &i.message).to_owned())
                .collect()
        })
    })
}

/// The help text and the errors under a control, with the ids `aria-describedby` names.
fn notes(f: &FormField, id: &str, errors: Signal<Vec<String>>) -> impl IntoView {
    let help = f.description.clone().map(|d| view! { <span class="hint" id=format!("{id}-help")>{d}</span> });
    let error_id = format!("{id}-error");
    view! {
        {help}
        <span class="field-problem" id=error_id role="alert" hidden=move || errors.with(Vec::is_empty)>
            {move || errors.get().join(" ")}
        </span>
    }
}

fn described_by(f: &FormField, id: &str) -> String {
    let help = f.description.as_ref().map(|_| format!("{id}-help "));
    format!("{}{id}-error", help.unwrap_or_default())
}

fn label_text(f: &FormField) -> impl IntoView {
    let required = f.required.then(|| view! { <span class="required" aria-hidden="true">" *"</span> });
    view! { {f.label.clone()}{required} }
}

fn object_view(f: FormField, children: Vec<FormField>, at: String, st: FormState) -> AnyView {
    let id = dom_id(&at);
    let errors = errors_at(st, at.clone());
    let inner = children
        .into_iter()
        .map(|c| {
            let place = run_form::child_pointer(&at, &c.key);
            field_view(c, place, st)
        })
        .collect_view();
    if at.is_empty() {
        return view! { {inner}{notes(&f, &id, errors)} }.into_any();
    }
    view! {
        <fieldset class="run-object" data-testid=format!("run-field-{at}") aria-describedby=described_by(&f, &id)>
            <legend>{label_text(&f)}</legend>
            {notes(&f, &id, errors)}
            {inner}
        </fieldset>
    }
    .into_any()
}

fn array_view(f: FormField, item: FormField, at: String, st: FormState) -> AnyView {
    let id = dom_id(&at);
    let errors = errors_at(st, at.clone());
    let place = at.clone();
    // Only a change in the number of rows redraws them (typing in a row must keep its focus).
    let rows = Memo::new(move |_| st.input.with(|v| v.pointer(&place).and_then(Value::as_array).map_or(0, Vec::len)));
    let (item, list_at) = (StoredValue::new(item), at.clone());
    let draw = move || {
        (0..rows.get())
            .map(|i| {
                let row = format!("{list_at}/{i}");
                let remove = row.clone();
                view! {
                    <div class="run-row">
                        {field_view(FormField { label: format!("Item {}", i + 1), ..item.get_value() }, row, st)}
                        <button type="button" class="link" aria-label=format!("Remove item {}", i + 1)
                            on:click=move |_| st.input.update(|v| run_form::set(v, &remove, None))>"Remove"</button>
                    </div>
                }
            })
            .collect_view()
    };
    let add_at = at.clone();
    let add = move |_| {
        let fresh = item.with_value(|i| i.default.clone().unwrap_or_else(|| blank(&i.kind)));
        st.input.update(|v| {
            let mut rows = v.pointer(&add_at).and_then(Value::as_array).cloned().unwrap_or_default();
            rows.push(fresh);
            run_form::set(v, &add_at, Some(Value::Array(rows)));
        });
    };
    view! {
        <fieldset class="run-array" data-testid=format!("run-field-{at}") aria-describedby=described_by(&f, &id)>
            <legend>{label_text(&f)}</legend>
            {notes(&f, &id, errors)}
            {draw}
            <button type="button" data-testid=format!("run-add-{at}") on:click=add>{format!("Add {}", f.label)}</button>
        </fieldset>
    }
    .into_any()
}

/// A new row's value before anything is typed.
fn blank(kind: &Kind) -> Value {
    match kind {
        Kind::Object(_) => Value::Object(Default::default()),
        Kind::Boolean => Value::Bool(false),
        Kind::Text { .. } => Value::String(String::new()),
        _ => Value::Null,
    }
}

fn leaf_view(f: FormField, at: String, st: FormState) -> AnyView {
    let id = dom_id(&at);
    let errors = errors_at(st, at.clone());
    let current = st.input.with_untracked(|v| v.pointer(&at).cloned());
    let (kind, place) = (f.kind.clone(), at.clone());
    // An emptied array row stays a row (blank): only its Remove button takes it away.
    let row = f.key.is_empty();
    let write = move |text: String| {
        let value = run_form::value_of(&kind, &text).or_else(|| row.then(|| blank(&kind)));
        st.input.update(|v| run_form::set(v, &place, value));
        // What the server said about this field no longer holds once it is edited.
        st.errors.update(|all| {
            all.retain(|i| run_form::violation_target(i.path.as_deref().unwrap_or(""), &i.message) != place)
        });
    };
    let testid = format!("run-field-{at}");
    let described = described_by(&f, &id);
    let control = match &f.kind {
        Kind::Boolean => {
            let checked = current.as_ref().and_then(Value::as_bool).unwrap_or(false);
            let place = at.clone();
            view! {
                <input type="checkbox" id=id.clone() data-testid=testid aria-describedby=described prop:checked=checked
                    on:change=move |ev| st.input.update(|v| run_form::set(v, &place, Some(Value::Bool(event_target_checked(&ev)))))/>
            }
            .into_any()
        }
        Kind::Choice(options) => {
            let chosen = run_form::text_of(&f.kind, current.as_ref());
            let options = options
                .iter()
                .map(|o| {
                    let text = run_form::text_of(&f.kind, Some(o));
                    view! { <option value=text.clone() selected=text == chosen>{text.clone()}</option> }
                })
                .collect_view();
            view! {
                <select id=id.clone() data-testid=testid aria-describedby=described aria-required=f.required.to_string()
                    on:change=move |ev| write(event_target_value(&ev))>
                    <option value="" selected=chosen.is_empty()>"(none)"</option>
                    {options}
                </select>
            }
            .into_any()
        }
        Kind::Json => view! {
            <textarea id=id.clone() rows="3" spellcheck="false" data-testid=testid aria-describedby=described
                prop:value=run_form::text_of(&f.kind, current.as_ref()) on:input=move |ev| write(event_target_value(&ev))></textarea>
        }
        .into_any(),
        kind => view! {
            <input type=run_form::input_type(kind) id=id.clone() data-testid=testid aria-describedby=described
                aria-required=f.required.to_string() step=matches!(kind, Kind::Number).then_some("any")
                prop:value=run_form::text_of(kind, current.as_ref()) on:input=move |ev| write(event_target_value(&ev))/>
        }
        .into_any(),
    };
    view! {
        <div class="field" class:has-problem=move || !errors.with(Vec::is_empty)>
            <label class="field-label" for=id.clone()>{label_text(&f)}</label>
            {control}
            {notes(&f, &id, errors)}
        </div>
    }
    .into_any()
}
