//! The value of an expression for the sample input, updated as either is typed. Uses the same
//! evaluator settings as the engine (see `crate::designer::preview`).

use crate::components::designer::json_input::JsonInput;
use crate::components::designer::sample_sources::SampleSources;
use crate::components::designer::state::Designer;
use crate::designer::preview;
use leptos::prelude::*;

#[component]
pub fn ExpressionPreview(
    #[prop(into)] expression: Signal<String>,
    /// The map node whose inner node the expression belongs to: it sees that map's first item.
    #[prop(optional_no_strip)]
    map_node: Option<String>,
) -> impl IntoView {
    let d = expect_context::<Designer>();
    let sample = d.sample;
    let items = Memo::new(move |_| {
        let node = map_node.as_deref()?;
        d.board.with(|b| {
            let items = b.editor.node(node)?.config.get("items")?;
            Some(items.as_str().unwrap_or_default().to_owned())
        })
    });
    // Evaluated once per change, though both the class and the text read it.
    let result = Memo::new(move |_| {
        sample.with(|s| match items.get() {
            Some(items) => preview::evaluate_per_item(&expression.get(), &items, s),
            None => preview::evaluate(&expression.get(), s),
        })
    });
    view! {
        <div class="preview">
            <JsonInput label="Sample input (JSON)" rows="2" test_id="sample-input" text=sample />
            <SampleSources />
            <output data-testid="expression-preview" class=move || if result.with(Result::is_ok) { "ok" } else { "error" }>
                {move || match result.get() {
                    Ok(v) => format!("= {v}"),
                    Err(e) => e,
                }}
            </output>
        </div>
    }
}
