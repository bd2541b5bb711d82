//! The value of an expression for the sample input, updated as either is typed. Uses the same
//! evaluator settings as the engine (see `crate::designer::preview`).

use crate::components::designer::json_input::JsonInput;
use crate::components::designer::state::Designer;
use crate::designer::preview;
use leptos::prelude::*;

#[component]
pub fn ExpressionPreview(#[prop(into)] expression: Signal<String>) -> impl IntoView {
    let d = expect_context::<Designer>();
    let sample = d.sample;
    // Evaluated once per change, though both the class and the text read it.
    let result = Memo::new(move |_| sample.with(|s| preview::evaluate(&expression.get(), s)));
    view! {
        <div class="preview">
            <JsonInput label="Sample input (JSON)" rows="2" test_id="sample-input" text=sample />
            <output data-testid="expression-preview" class=move || if result.with(Result::is_ok) { "ok" } else { "error" }>
                {move || match result.get() {
                    Ok(v) => format!("= {v}"),
                    Err(e) => e,
                }}
            </output>
        </div>
    }
}
