//! Loads the two runs of `/compare?a=…&b=…` and the versions they ran; `b=last-success` first
//! finds the newest succeeded run of A's workflow. A missing or unknown id is said on the page.

use super::compare_view::{CompareView, Loaded, Run};
use crate::api;
use crate::api_views::latest_success;
use crate::compare::{self, LAST_SUCCESS};
use crate::components::fetch::Loading;
use crate::error::ApiError;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_router::hooks::{use_navigate, use_query_map};
use leptos_router::NavigateOptions;

#[component]
pub fn ComparePage() -> impl IntoView {
    let query = use_query_map();
    let ids = Memo::new(move |_| query.with(|q| (q.get("a").unwrap_or_default(), q.get("b").unwrap_or_default())));
    let state = RwSignal::new(None::<Result<Loaded, String>>);
    let navigate = use_navigate();
    Effect::new(move |_| {
        let (a, b) = ids.get();
        state.set(None);
        if a.trim().is_empty() || b.trim().is_empty() {
            return state.set(Some(Err(
                "Choose two runs to compare: select two rows on the Instances page and press “Compare”.".into(),
            )));
        }
        let navigate = navigate.clone();
        spawn_local(async move {
            if b == LAST_SUCCESS {
                match last_success_of(&a).await {
                    Ok(b) => navigate(&compare::page(&a, &b), NavigateOptions { replace: true, ..Default::default() }),
                    Err(why) => state.set(Some(Err(why))),
                }
                return;
            }
            let loaded = match (run("A", &a).await, run("B", &b).await) {
                (Ok(a), Ok(b)) => Ok(Loaded { a, b }),
                (Err(why), _) | (_, Err(why)) => Err(why),
            };
            state.set(Some(loaded));
        });
    });
    view! {
        <main class="page wide compare-page">
            <div class="toolbar"><h1>"Compare runs"</h1></div>
            {move || match state.get() {
                None => view! { <Loading /> }.into_any(),
                Some(Err(why)) => view! { <p class="alert" role="alert" data-testid="compare-error">{why}</p> }.into_any(),
                Some(Ok(loaded)) => view! { <CompareView loaded=loaded /> }.into_any(),
            }}
        </main>
    }
}

/// Run `id` (called `label` on the page) and the version it ran, or what to tell about it.
async fn run(label: &str, id: &str) -> Result<Run, String> {
    let told = |err: ApiError| match &err {
        ApiError::Problem(p) if p.status == 404 || p.status == 400 => {
            format!("Run {label} (`{id}`) was not found: check the id, or it may have been purged.")
        }
        _ => format!("Run {label} could not be loaded: {}", err.message()),
    };
    let detail = api::get_instance(id).await.map_err(told)?;
    let version = api::get_version(&detail.summary.workflow_id, detail.summary.version).await.map_err(told)?;
    Ok(Run { definition: crate::run::graph::placed(&version.definition), detail })
}

async fn last_success_of(a: &str) -> Result<String, String> {
    let detail = api::get_instance(a).await.map_err(|_| format!("Run A (`{a}`) was not found."))?;
    let found = latest_success(&detail.summary.workflow_id).await.map_err(|e| e.message())?;
    found.ok_or_else(|| "This workflow has no succeeded run to compare with yet.".to_owned())
}
