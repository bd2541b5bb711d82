//! The configuration form of one node: id, common fields (name, timeout, retry) and the fields
//! of its type, each validated as it is typed.

use crate::components::designer::field_input::FieldInput;
use crate::components::designer::map_form::MapForm;
use crate::components::designer::state::Designer;
use crate::designer::editor::Edit;
use crate::designer::forms::{self, Field};
use leptos::prelude::*;
use trellis_model::config::NodeKind;

/// One field of the node `node_id`, its text read from the node as the board has it now.
pub fn node_field(node_id: StoredValue<String>, field: Field) -> impl IntoView {
    let d = expect_context::<Designer>();
    let path = field.at();
    let on_change = Callback::new(move |text: String| {
        let id = node_id.get_value();
        let node = d.board.with_untracked(|b| b.editor.node(&id).cloned()).ok_or("The node is gone.")?;
        let updated = forms::edit_node(&node, &field, &text)?;
        d.edit(Edit::UpdateNode { node: updated, field: field.at() });
        Ok(())
    });
    let initial = d.board.with_untracked(|b| {
        let node = b.editor.node(&node_id.get_value()).and_then(|n| serde_json::to_value(n).ok());
        node.map(|json| forms::read(&json, &path)).unwrap_or_default()
    });
    let problem = Signal::derive(move || d.issues.with(|p| p.field(&node_id.get_value(), &path)));
    view! { <FieldInput field=field initial=initial on_change=on_change problem=problem node=node_id.get_value() /> }
}

#[component]
pub fn NodeForm(id: String) -> impl IntoView {
    let d = expect_context::<Designer>();
    let Some(node) = d.board.with_untracked(|b| b.editor.node(&id).cloned()) else {
        return view! { <p class="hint">"This node no longer exists."</p> }.into_any();
    };
    let kind = NodeKind::parse(&node.kind);
    let node_id = StoredValue::new(id.clone());
    let common = forms::common_fields().into_iter().map(|f| node_field(node_id, f)).collect_view();
    let limit = kind.filter(|k| k.spec().takes_limit).map(|_| node_field(node_id, forms::limit_field()));
    let config = match kind {
        Some(NodeKind::Map) => view! { <MapForm node_id=node_id /> }.into_any(),
        other => other
            .map(forms::config_fields)
            .unwrap_or_default()
            .into_iter()
            .map(|f| node_field(node_id, f))
            .collect_view()
            .into_any(),
    };

    let rename_error = RwSignal::new(None::<String>);
    let on_rename = move |ev: leptos::ev::Event| {
        let to = event_target_value(&ev).trim().to_owned();
        let from = node_id.get_value();
        let mut result = Ok(());
        d.board.update(|b| result = b.editor.apply(Edit::RenameNode { from, to }));
        rename_error.set(result.err());
    };
    let node_problems = move || d.issues.with(|p| p.nodes.get(&node_id.get_value()).cloned().unwrap_or_default());
    let description = kind.map(NodeKind::description).unwrap_or("Unknown node type.");
    // Connecting from the keyboard: choose the node this one leads to.
    let targets = d
        .board
        .with_untracked(|b| b.editor.doc.nodes.iter().map(|n| n.id.clone()).filter(|t| *t != id).collect::<Vec<_>>());
    let connect = move |ev: leptos::ev::Event| {
        let to = event_target_value(&ev);
        if !to.is_empty() {
            d.edit(Edit::Connect { from: node_id.get_value(), to });
        }
    };
    let delete = move |_| {
        d.board.update(|b| b.editor.select_only(&node_id.get_value()));
        d.edit(Edit::DeleteSelection);
    };

    view! {
        <section class="node-form" aria-label="Node configuration">
            <h2>{node.kind.clone()}</h2>
            <p class="hint">{description}</p>
            <label class="field" class:has-problem=move || rename_error.get().is_some()>
                <span class="field-label">"Id"</span>
                <input data-testid="field-id" prop:value=id.clone() on:change=on_rename />
                {move || rename_error.get().map(|m| view! { <span class="field-problem" role="alert">{m}</span> })}
            </label>
            {config}
            {limit}
            <details open=node.retry.is_some() || node.timeout_ms.is_some()>
                <summary>"Name, timeout and retry"</summary>
                {common}
            </details>
            <label class="field">
                <span class="field-label">"Connect to"</span>
                <select data-testid="connect-to" on:change=connect>
                    <option value="" selected=true>"(choose a node)"</option>
                    {targets.into_iter().map(|t| view! { <option value=t.clone()>{t.clone()}</option> }).collect_view()}
                </select>
            </label>
            <ul class="problems" aria-label="Problems with this node">
                {move || node_problems().into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}
            </ul>
            <button type="button" class="danger" on:click=delete>"Delete node"</button>
        </section>
    }
    .into_any()
}
