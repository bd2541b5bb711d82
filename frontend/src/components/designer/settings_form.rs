//! Workflow settings (concurrency limit, what happens at the limit, concurrency key, throttle, rate limit,
//! parallelism, timeout, input schema) and
//! the problems and warnings of the draft as a whole.

use crate::components::designer::field_input::FieldInput;
use crate::components::designer::state::Designer;
use crate::designer::editor::Edit;
use crate::designer::forms::{self, Field, FieldKind};
use leptos::prelude::*;

#[component]
pub fn SettingsForm() -> impl IntoView {
    let d = expect_context::<Designer>();
    let json = d.board.with_untracked(|b| serde_json::to_value(&b.editor.doc.settings).unwrap_or_default());
    let fields = forms::settings_fields()
        .into_iter()
        .map(|field: Field| {
            let on_change = Callback::new(move |text: String| {
                let settings = d.board.with_untracked(|b| b.editor.doc.settings.clone());
                let updated = forms::edit_settings(&settings, &field, &text)?;
                d.edit(Edit::UpdateSettings { settings: updated, field: field.path.to_owned() });
                Ok(())
            });
            let problem = Signal::derive(move || d.issues.with(|p| p.settings.get(field.path).map(|m| m.join(" "))));
            // A schema is edited indented, as it is written by hand.
            let initial = match (field.kind, json.get(field.path)) {
                (FieldKind::Json, Some(v)) if !v.is_null() => serde_json::to_string_pretty(v).unwrap_or_default(),
                _ => forms::read(&json, field.path),
            };
            view! { <FieldInput field=field initial=initial on_change=on_change problem=problem /> }
        })
        .collect_view();
    let general = move || d.issues.with(|p| p.general.clone());
    let warnings = move || d.warnings.with(|w| w.iter().map(|i| i.message.clone()).collect::<Vec<_>>());
    view! {
        <section class="settings-form" aria-label="Workflow settings">
            <h2>"Workflow settings"</h2>
            {fields}
            <ul class="problems" aria-label="Problems with the workflow">
                {move || general().into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}
            </ul>
            <ul class="warnings" aria-label="Warnings">
                {move || warnings().into_iter().map(|m| view! { <li>{m}</li> }).collect_view()}
            </ul>
        </section>
    }
}
