//! One shared limit in the list: what it allows, what it holds now (attempts running and
//! waiting, its window's use, a pause a `Retry-After` asked for), the workflows naming it,
//! and for editors "Change" and "Delete".

use super::limit_form::LimitForm;
use crate::api_limits;
use crate::components::mutation::Mutation;
use crate::format;
use leptos::prelude::*;
use trellis_model::api::SharedLimit;
use trellis_model::flow::period_words;

/// "2 at once · 20 per 1 s".
pub fn allows(limit: &SharedLimit) -> String {
    let mut parts = Vec::new();
    if let Some(n) = limit.concurrency {
        parts.push(format!("{n} at once"));
    }
    if let Some(rate) = limit.rate {
        parts.push(format!("{} per {}", rate.limit, period_words(rate.period_ms)));
    }
    parts.join(" · ")
}

/// "1 of 2 running · 3 waiting · 7 of 20 this period · paused until …".
pub fn holds(limit: &SharedLimit) -> String {
    let mut parts = Vec::new();
    match limit.concurrency {
        Some(n) => parts.push(format!("{} of {n} running", limit.in_use)),
        None => parts.push(format!("{} running", limit.in_use)),
    }
    if limit.waiting > 0 {
        parts.push(format!("{} waiting", limit.waiting));
    }
    if let Some(rate) = limit.rate {
        parts.push(format!("{} of {} this period", limit.rate_used, rate.limit));
    }
    if let Some(until) = &limit.paused_until {
        parts.push(format!("paused until {} (the API asked to wait)", format::timestamp(until)));
    }
    parts.join(" · ")
}

#[component]
pub fn LimitRow(limit: SharedLimit, editor: Signal<bool>, on_done: Callback<Result<String, String>>) -> impl IntoView {
    let name = StoredValue::new(limit.name.clone());
    let editing = RwSignal::new(false);
    let used = limit.used_by.len();
    let deleting = Mutation::new();
    let delete = move |_| {
        let warning = if used > 0 { " Nodes naming it will run without a limit." } else { "" };
        if !window().confirm_with_message(&format!("Delete the limit {}?{warning}", name.get_value())).unwrap_or(false)
        {
            return;
        }
        deleting.settle(async move { api_limits::delete_limit(&name.get_value()).await }, move |said| {
            on_done.run(said.map(|()| format!("Deleted {}.", name.get_value())).map_err(|e| e.message()));
        });
    };
    let used_by = if limit.used_by.is_empty() {
        view! { <span class="muted">"No workflow"</span> }.into_any()
    } else {
        limit.used_by.join(", ").into_any()
    };
    let shown = StoredValue::new(limit.clone());
    let done_editing = Callback::new(move |said: Result<String, String>| {
        editing.set(false);
        on_done.run(said);
    });
    view! {
        <tr data-testid="limit-row" data-name=limit.name.clone()>
            <td class="name"><code>{limit.name.clone()}</code></td>
            <td class="allows">{allows(&limit)}</td>
            <td class="holds" data-testid="limit-holds">{holds(&limit)}</td>
            <td class="used-by">{used_by}</td>
            <td class="actions">
                {move || (editor.get() && !editing.get()).then(|| view! {
                    <button type="button" on:click=move |_| editing.set(true)>"Change"</button>
                    <button type="button" class="danger" on:click=delete>"Delete"</button>
                })}
                {move || editing.get().then(|| view! {
                    <LimitForm editing=Some(shown.get_value()) on_done=done_editing
                        on_cancel=Callback::new(move |()| editing.set(false)) />
                })}
            </td>
        </tr>
    }
}
