//! One form field of the side panel. It keeps the text as typed (so a half-typed number or JSON
//! is not lost), hands each change to `on_change`, and shows either why the text cannot be used
//! or what the validator says about the stored value.

use crate::components::designer::code_editor::CodeEditor;
use crate::components::designer::expression_preview::ExpressionPreview;
use crate::components::designer::script_preview::ScriptPreview;
use crate::components::designer::text_control::TextControl;
use crate::components::designer::workflow_picker::WorkflowPicker;
use crate::designer::forms::{Field, FieldKind};
use leptos::prelude::*;

#[component]
pub fn FieldInput(
    field: Field,
    initial: String,
    /// Stores the text; `Err` says why it cannot be stored.
    on_change: Callback<String, Result<(), String>>,
    /// The validator's verdict on the stored value.
    #[prop(into)]
    problem: Signal<Option<String>>,
    /// The node the field belongs to (a script's preview reads its limits).
    #[prop(optional)]
    node: Option<String>,
) -> impl IntoView {
    let text = RwSignal::new(initial.clone());
    let parse_error = RwSignal::new(None::<String>);
    let change = move |value: String| {
        text.set(value.clone());
        parse_error.set(on_change.run(value).err());
    };
    let message = move || parse_error.get().or_else(|| problem.get());
    let testid = format!("field-{}", field.at());
    let control = match field.kind {
        FieldKind::Select(_) | FieldKind::Toggle => {
            // A toggle is a choice too: unset (the node's default), false or true.
            let options: &[&str] = match field.kind {
                FieldKind::Select(options) => options,
                _ => &["false", "true"],
            };
            let options = options
                .iter()
                .map(|o| {
                    let selected = *o == initial;
                    view! { <option value=*o selected=selected>{*o}</option> }
                })
                .collect_view();
            view! {
                <select data-testid=testid on:change=move |ev| change(event_target_value(&ev))>
                    <option value="" selected=initial.is_empty()>"(default)"</option>
                    {options}
                </select>
            }
            .into_any()
        }
        FieldKind::Code => {
            let on_input = Callback::new(move |value: String| change(value));
            view! { <CodeEditor test_id=testid initial=initial.clone() on_input=on_input /> }.into_any()
        }
        FieldKind::Workflow => {
            let pick = Callback::new(move |id: String| change(id));
            view! { <WorkflowPicker testid=testid initial=initial.clone() on_pick=pick /> }.into_any()
        }
        _ => {
            let on_text = Callback::new(move |value: String| change(value));
            view! { <TextControl field=field testid=testid initial=initial.clone() on_text=on_text /> }.into_any()
        }
    };
    let preview = match field.kind {
        FieldKind::Expression => {
            // A field under a map's inner node sees the map's item and index.
            let map_node = node.clone().filter(|_| !field.prefix.is_empty());
            Some(view! { <ExpressionPreview expression=text map_node=map_node /> }.into_any())
        }
        FieldKind::Code => Some(view! { <ScriptPreview source=text node=node.unwrap_or_default() /> }.into_any()),
        _ => None,
    };
    view! {
        <label class="field" class:has-problem=move || message().is_some()>
            <span class="field-label">{field.label}</span>
            {control}
            {(!field.hint.is_empty()).then(|| view! { <span class="hint">{field.hint}</span> })}
            {move || message().map(|m| view! { <span class="field-problem" role="alert">{m}</span> })}
        </label>
        {preview}
    }
}
