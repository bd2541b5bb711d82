//! A field typed as text: one line (text, numbers, lists, versions) or several (JSON,
//! expressions). In a node's configuration, where templates go, it suggests secret names while
//! `{{ secret.` is typed.

use crate::components::designer::secret_suggest::{SecretSuggestions, Typing};
use crate::designer::forms::{Field, FieldKind};
use crate::designer::secret_names::{byte_offset, complete, utf16_offset};
use leptos::html;
use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;

#[component]
pub fn TextControl(field: Field, testid: String, initial: String, on_text: Callback<String>) -> impl IntoView {
    let typing: Typing = RwSignal::new(None);
    let templated = matches!(field.kind, FieldKind::Text | FieldKind::Json) && field.path.starts_with("config.");
    let line = NodeRef::<html::Input>::new();
    let lines = NodeRef::<html::Textarea>::new();
    let on_input = move |ev: leptos::ev::Event| {
        let text = event_target_value(&ev);
        if templated {
            let caret = caret_of(&ev).map_or(text.len(), |c| byte_offset(&text, c as usize));
            typing.set(Some((text.clone(), caret)));
        }
        on_text.run(text);
    };
    let pick = Callback::new(move |(name, start, caret): (String, usize, usize)| {
        let Some((text, _)) = typing.get_untracked() else { return };
        let (text, caret) = complete(&text, start, caret, &name);
        let at = utf16_offset(&text, caret) as u32;
        if let Some(el) = line.get_untracked() {
            el.set_value(&text);
            let _ = el.set_selection_range(at, at);
            let _ = el.focus();
        } else if let Some(el) = lines.get_untracked() {
            el.set_value(&text);
            let _ = el.set_selection_range(at, at);
            let _ = el.focus();
        }
        typing.set(Some((text.clone(), caret)));
        on_text.run(text);
    });
    let control = if matches!(field.kind, FieldKind::Json | FieldKind::Expression) {
        view! { <textarea node_ref=lines data-testid=testid rows="3" spellcheck="false" prop:value=initial on:input=on_input></textarea> }
            .into_any()
    } else {
        let mode = if field.kind == FieldKind::Number { "numeric" } else { "text" };
        view! { <input node_ref=line data-testid=testid inputmode=mode prop:value=initial on:input=on_input /> }
            .into_any()
    };
    view! {
        {control}
        {templated.then(|| view! { <SecretSuggestions typing=typing on_pick=pick /> })}
    }
}

/// Where the caret is in the field an input event came from (UTF-16 units, as browsers count).
fn caret_of(ev: &leptos::ev::Event) -> Option<u32> {
    let target = ev.target()?;
    if let Some(input) = target.dyn_ref::<web_sys::HtmlInputElement>() {
        return input.selection_start().ok().flatten();
    }
    target.dyn_ref::<web_sys::HtmlTextAreaElement>()?.selection_start().ok().flatten()
}
