//! A `map` node's configuration: its items, what runs per item (a select of the types a map may
//! run, or a workflow) with that inner node's own form, and how many items run at once and what
//! a failed one does.

use crate::components::designer::node_form::node_field;
use crate::components::designer::state::Designer;
use crate::designer::editor::Edit;
use crate::designer::forms::config_fields;
use crate::designer::map_form::{choices, choose, inner_fields, per_item, CHOICE_PATHS};
use leptos::prelude::*;
use trellis_model::config::NodeKind;

#[component]
pub fn MapForm(node_id: StoredValue<String>) -> impl IntoView {
    let d = expect_context::<Designer>();
    let initial = d.board.with_untracked(|b| b.editor.node(&node_id.get_value()).and_then(|n| per_item(&n.config)));
    // Held here rather than read from the node: clearing the last inner field must not unpick it.
    let choice = RwSignal::new(initial.unwrap_or_default());
    let fields = config_fields(NodeKind::Map);
    let (items, rest) = fields.split_at(1);
    let pick = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        let id = node_id.get_value();
        if let Some(node) = d.board.with_untracked(|b| b.editor.node(&id).cloned()) {
            d.edit(Edit::UpdateNode { node: choose(&node, &value), field: "config.node.type".to_owned() });
        }
        choice.set(value);
    };
    let problem = move || {
        let id = node_id.get_value();
        let found: Vec<String> = d.issues.with(|p| CHOICE_PATHS.iter().filter_map(|path| p.field(&id, path)).collect());
        (!found.is_empty()).then(|| found.join(" "))
    };
    let options = choices().into_iter().map(|(value, label)| {
        let selected = choice.get_untracked() == value;
        view! { <option value=value selected=selected>{label}</option> }
    });
    view! {
        {items.iter().map(|f| node_field(node_id, *f)).collect_view()}
        <label class="field" class:has-problem=move || problem().is_some()>
            <span class="field-label">"Run per item"</span>
            <select data-testid="field-map-per-item" on:change=pick>
                <option value="" selected=choice.get_untracked().is_empty()>"(choose)"</option>
                {options.collect_view()}
            </select>
            <span class="hint">"A node of this type runs once per item (item and index in scope), or a workflow with the item as its input."</span>
            {move || problem().map(|m| view! { <span class="field-problem" role="alert">{m}</span> })}
        </label>
        <fieldset class="map-inner" data-testid="map-inner">
            <legend>{move || match choice.get().as_str() {
                "" => "Per item: choose what runs".to_owned(),
                "workflow" => "Per item: the workflow".to_owned(),
                kind => format!("Per item: {kind}"),
            }}</legend>
            {move || inner_fields(&choice.get()).into_iter().map(|f| node_field(node_id, f)).collect_view()}
        </fieldset>
        {rest.iter().map(|f| node_field(node_id, *f)).collect_view()}
    }
}
