//! Runs the script being edited against the designer's sample input on the server (the
//! browser has no QuickJS), with the node's limits, and shows its output and logs or its
//! failure — what an attempt would store.

use crate::api;
use crate::components::designer::json_input::JsonInput;
use crate::components::designer::sample_sources::SampleSources;
use crate::components::designer::state::Designer;
use crate::components::mutation::Mutation;
use crate::designer::code;
use leptos::prelude::*;
use trellis_model::api::{ScriptPreview as Ran, ScriptProblem};

#[derive(Debug, Clone)]
enum Shown {
    Ran(Ran),
    Failed(ScriptProblem),
    Refused(String),
}

#[component]
pub fn ScriptPreview(#[prop(into)] source: Signal<String>, node: String) -> impl IntoView {
    let d = expect_context::<Designer>();
    let shown = RwSignal::new(None::<Shown>);
    let previewing = Mutation::new();
    let running = previewing.pending();
    let node = StoredValue::new(node);
    let run = move |_| {
        let config =
            d.board.with_untracked(|b| b.editor.node(&node.get_value()).map(|n| n.config.clone())).unwrap_or_default();
        let request = match code::preview_request(&source.get_untracked(), &d.sample.get_untracked(), &config) {
            Ok(request) => request,
            Err(why) => return shown.set(Some(Shown::Refused(why))),
        };
        // Every outcome, a refusal too, shows in the preview's own view.
        previewing.settle(async move { api::preview_script(&request).await }, move |said| {
            let answer = match said {
                Ok(Ok(ran)) => Shown::Ran(ran),
                Ok(Err(failed)) => Shown::Failed(failed),
                Err(e) => Shown::Refused(e.message()),
            };
            shown.set(Some(answer));
        });
    };
    let logs = |lines: Vec<String>| {
        (!lines.is_empty()).then(|| view! { <pre class="logs" data-testid="script-logs">{lines.join("\n")}</pre> })
    };
    let result = move || {
        shown.get().map(|s| match s {
            Shown::Ran(ran) => view! {
                <output data-testid="script-preview" class="ok">
                    {format!("= {}", serde_json::to_string_pretty(&ran.output).unwrap_or_default())}
                </output>
                {logs(ran.logs)}
            }
            .into_any(),
            Shown::Failed(failed) => view! {
                <output data-testid="script-preview" class="error">{failed.problem.detail.unwrap_or_default()}</output>
                {logs(failed.logs)}
            }
            .into_any(),
            Shown::Refused(why) => {
                view! { <output data-testid="script-preview" class="error">{why}</output> }.into_any()
            }
        })
    };
    view! {
        <div class="preview script-preview">
            <JsonInput label="Sample input (JSON)" rows="2" test_id="sample-input" text=d.sample />
            <SampleSources />
            <button type="button" data-testid="script-preview-run" on:click=run disabled=move || running.get()>
                {move || if running.get() { "Running…" } else { "Preview" }}
            </button>
            {result}
        </div>
    }
}
