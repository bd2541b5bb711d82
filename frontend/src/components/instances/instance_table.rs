//! The table of instances: status, workflow, version, key, created, duration, error, and for
//! operators a checkbox per row to act on the selected ones. Names, keys and errors are user
//! data and render as text nodes, never as markup.

use crate::format;
use crate::urls;
use leptos::prelude::*;
use trellis_model::api::InstanceSummary;

#[component]
pub fn InstanceTable(
    #[prop(into)] items: Signal<Vec<InstanceSummary>>,
    #[prop(into)] empty_message: Signal<Option<String>>,
    /// Whether rows can be selected (operators and above).
    #[prop(into)]
    selectable: Signal<bool>,
    /// The ids of the selected rows, in the order they were picked.
    selected: RwSignal<Vec<String>>,
) -> impl IntoView {
    let all_shown_selected = move || {
        let shown = items.with(|i| i.iter().map(|i| i.id.clone()).collect::<Vec<_>>());
        !shown.is_empty() && selected.with(|s| shown.iter().all(|id| s.contains(id)))
    };
    let select_all_shown = move |on: bool| {
        let shown: Vec<String> = items.with_untracked(|i| i.iter().map(|i| i.id.clone()).collect());
        selected.update(|s| {
            s.retain(|id| !shown.contains(id));
            if on {
                s.extend(shown);
            }
        });
    };
    let columns = move || if selectable.get() { "8" } else { "7" };
    view! {
        <table class="workflows instances" data-testid="instances-table">
            <thead>
                <tr>
                    <Show when=move || selectable.get()>
                        <th scope="col" class="select">
                            <input
                                type="checkbox"
                                aria-label="Select every row shown"
                                data-testid="select-all-rows"
                                prop:checked=all_shown_selected
                                on:change=move |ev| select_all_shown(event_target_checked(&ev))
                            />
                        </th>
                    </Show>
                    <th scope="col">"Status"</th>
                    <th scope="col">"Workflow"</th>
                    <th scope="col" class="version">"Version"</th>
                    <th scope="col">"Key"</th>
                    <th scope="col" class="updated">"Created"</th>
                    <th scope="col" class="version">"Duration"</th>
                    <th scope="col">"Error"</th>
                </tr>
            </thead>
            <tbody>
                <For
                    each=move || items.get()
                    key=|i| (i.id.clone(), i.status, i.ended_at)
                    children=move |i: InstanceSummary| view! { <InstanceRow i=i selectable=selectable selected=selected /> }
                />
                {move || empty_message.get().map(|text| view! { <tr><td colspan=columns class="empty">{text}</td></tr> })}
            </tbody>
        </table>
    }
}

#[component]
fn InstanceRow(i: InstanceSummary, selectable: Signal<bool>, selected: RwSignal<Vec<String>>) -> impl IntoView {
    let exact = format::rfc3339(&i.created_at);
    let workflow = i.workflow_name.clone().unwrap_or_else(|| i.workflow_id.clone());
    let error = i.error.clone().unwrap_or_default();
    let first_line = error.lines().next().unwrap_or_default().to_owned();
    let id = i.id.clone();
    let is_selected = {
        let id = id.clone();
        move || selected.with(|s| s.contains(&id))
    };
    let toggle = {
        let id = id.clone();
        move |on: bool| {
            selected.update(|s| {
                s.retain(|x| *x != id);
                if on {
                    s.push(id.clone());
                }
            })
        }
    };
    let row_selected = is_selected.clone();
    view! {
        <tr data-testid="instance-row" data-id=id.clone() data-status=i.status.as_str() class:selected=row_selected>
            <Show when=move || selectable.get()>
                <td class="select">
                    <input
                        type="checkbox"
                        aria-label="Select this instance"
                        data-testid="select-row"
                        prop:checked=is_selected.clone()
                        on:change={
                            let toggle = toggle.clone();
                            move |ev| toggle(event_target_checked(&ev))
                        }
                    />
                </td>
            </Show>
            <td>
                <a class=format!("status run-{}", i.status.as_str()) href=urls::instance_page(&id)>
                    {i.status.as_str().replace('_', " ")}
                </a>
            </td>
            <td class="name"><a href=urls::instance_page(&id)>{workflow}</a></td>
            <td class="version">{format!("v{}", i.version)}</td>
            <td class="key">{i.key.clone().unwrap_or_default()}</td>
            <td class="updated">
                <time datetime=exact.clone() title=exact>{format::timestamp(&i.created_at)}</time>
            </td>
            <td class="version">{format::run_duration(i.started_at, i.ended_at)}</td>
            <td class="error" title=error>{first_line}</td>
        </tr>
    }
}
