//! Where a preview's sample input can come from besides typing it: an example of the draft's
//! input schema, or the input and node outputs of this workflow's latest run.

use crate::api;
use crate::components::designer::state::Designer;
use crate::designer::preview::sample_from_run;
use crate::instance_filter::InstanceFilter;
use crate::schema_example;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn SampleSources() -> impl IntoView {
    let d = expect_context::<Designer>();
    let why_not = RwSignal::new(None::<String>);
    let example = Memo::new(move |_| {
        d.board.with(|b| b.editor.doc.settings.input_schema.as_ref().and_then(schema_example::example))
    });
    let from_schema = move |_| {
        if let Some(example) = example.get_untracked() {
            d.sample.set(serde_json::to_string_pretty(&example).unwrap_or_default());
            why_not.set(None);
        }
    };
    let from_last_run = move |_| {
        spawn_local(async move {
            match last_run_sample(&d.id()).await {
                Ok(Some(sample)) => {
                    d.sample.set(sample);
                    why_not.set(None);
                }
                Ok(None) => why_not.set(Some("This workflow has no run yet.".to_owned())),
                Err(e) => why_not.set(Some(e.message())),
            }
        });
    };
    view! {
        <div class="sample-sources">
            <Show when=move || example.with(Option::is_some)>
                <button type="button" class="link" data-testid="sample-from-schema" on:click=from_schema>
                    "Example of the input schema"
                </button>
            </Show>
            <button type="button" class="link" data-testid="sample-from-run" on:click=from_last_run>"From the last run"</button>
            {move || why_not.get().map(|why| view! { <span class="muted" role="status">{why}</span> })}
        </div>
    }
}

/// The latest run's input and node outputs as a sample, or `None` when there is no run.
async fn last_run_sample(workflow: &str) -> Result<Option<String>, crate::error::ApiError> {
    let filter = InstanceFilter { workflow: Some(workflow.to_owned()), ..Default::default() };
    let page = api::list_instances(&filter.api_url(None, 1)).await?;
    let Some(latest) = page.items.first() else { return Ok(None) };
    let run = api::get_instance(&latest.id).await?;
    Ok(Some(serde_json::to_string_pretty(&sample_from_run(&run.input, &run.nodes)).unwrap_or_default()))
}
