//! The details of the node last clicked on the run graph: an approval node's link to its
//! approval, its attempts (number, start, end, duration, outcome, error), the last attempt's logs
//! (scripts), its output, its config as the instance's version has it, and a map's progress and
//! items. The drawer is built once per picked node; each part follows the run on its own, so a
//! map's item table keeps its page while progress pours in.

use crate::approvals::node_approval;
use crate::components::copy_button::CopyButton;
use crate::components::json_block::JsonBlock;
use crate::components::run::map_items::MapItems;
use crate::components::run::state::RunView;
use crate::components::table_parts::TableHead;
use crate::format;
use crate::run::attempts::{attempts, failed};
use crate::run::family::child_link;
use crate::run::items;
use leptos::prelude::*;

const COLUMNS: &[(&str, &str)] =
    &[("Attempt", ""), ("Started", ""), ("Ended", ""), ("Duration", ""), ("Outcome", ""), ("Error", "")];

/// An attempt's instant to the millisecond (attempts are often milliseconds apart), UTC.
pub fn clock(at: &chrono::DateTime<chrono::Utc>) -> String {
    at.format("%H:%M:%S%.3f").to_string()
}

pub fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

#[component]
pub fn NodeDetails() -> impl IntoView {
    let v = expect_context::<RunView>();
    move || {
        let node = v.picked.get()?;
        let config = v.definition.with(|d| {
            d.as_ref().and_then(|d| d.nodes.iter().find(|n| n.id == node)).map(|n| (n.kind.clone(), n.config.clone()))
        });
        let is_map = config.as_ref().is_some_and(|(kind, _)| kind == "map");
        let close = move |_| v.picked.set(None);
        let key = node.clone();
        let child =
            move || v.detail.with(|d| d.as_ref().and_then(|d| child_link(d.nodes.iter().find(|n| n.id == key)?)));
        let key = node.clone();
        let approval =
            move || v.detail.with(|d| d.as_ref().and_then(|d| node_approval(d.nodes.iter().find(|n| n.id == key)?)));
        let key = node.clone();
        let progress = move || v.run.with(|r| v.detail.with(|d| items::progress(r, d.as_ref(), &key)));
        Some(view! {
            <section class="node-details" data-testid="node-details" aria-label=format!("Node {node}")>
                <header>
                    <h2>"Node " <code>{node.clone()}</code> {config.as_ref().map(|(kind, _)| format!(" · {kind}"))}</h2>
                    <button type="button" on:click=close>"Close"</button>
                </header>
                {move || child().map(|l| view! { <p><a class="child-link" href=l.href data-testid="node-child-link">{l.text}</a></p> })}
                {move || approval().map(|(href, waiting)| view! {
                    <p class="node-approval" data-testid="node-approval">
                        {waiting.then_some("Waits for approval · ")}
                        <a href=href data-testid="node-approval-link">"Open approval"</a>
                    </p>
                })}
                {move || progress().map(|p| view! { <p class="map-progress" data-testid="map-progress">{items::progress_text(&p)}</p> })}
                <Attempts node=node.clone() />
                <NodeOutput node=node.clone() />
                {is_map.then(|| view! { <MapItems node=node.clone() /> })}
                {config.map(|(_, c)| {
                    let text = pretty(&c);
                    view! {
                        <details>
                            <summary>"Config as run"</summary>
                            <CopyButton text=text.clone() label="Copy config" />
                            <pre>{text}</pre>
                        </details>
                    }
                })}
            </section>
        })
    }
}

/// The node's attempts, and the last attempt's logs.
#[component]
fn Attempts(node: String) -> impl IntoView {
    let v = expect_context::<RunView>();
    move || {
        let rows = v.run.with(|r| attempts(r, &node));
        // The last attempt that logged anything (a script's `console` lines).
        let logs = rows.iter().rev().find(|a| !a.logs.is_empty()).map(|a| (a.number, a.logs.clone()));
        view! {
            <table class="workflows attempts" data-testid="node-attempts">
                <TableHead columns=COLUMNS />
                <tbody>
                    {rows.is_empty().then(|| view! { <tr><td colspan="6" class="empty">"Not run yet."</td></tr> })}
                    {rows.into_iter().map(|a| {
                        let class = if failed(&a) { "status run-failed" } else { "status" };
                        view! {
                            <tr data-testid="attempt-row">
                                <td>{a.number}</td>
                                <td title=format::rfc3339(&a.start)>{clock(&a.start)}</td>
                                <td>{a.end.as_ref().map(clock).unwrap_or_else(|| "—".to_owned())}</td>
                                <td>{a.duration_ms.map(|ms| format!("{ms} ms")).unwrap_or_else(|| "—".to_owned())}</td>
                                <td class=class>{a.outcome.clone()}</td>
                                <td class="error">{a.error.clone().unwrap_or_default()}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            {logs.map(|(number, lines)| view! {
                <details open data-testid="node-logs">
                    <summary>{format!("Logs of attempt {number}")}</summary>
                    <pre class="logs">{lines.join("\n")}</pre>
                </details>
            })}
        }
    }
}

/// The node's output, as the instance has it.
#[component]
fn NodeOutput(node: String) -> impl IntoView {
    let v = expect_context::<RunView>();
    let output = Memo::new(move |_| {
        v.detail.with(|d| d.as_ref().and_then(|d| d.nodes.iter().find(|n| n.id == node)?.output.clone()))
    });
    move || {
        output.get().map(|o| {
            let text = pretty(&o);
            view! {
                <details open>
                    <summary>"Output"</summary>
                    <CopyButton text=text.clone() label="Copy output" />
                    <JsonBlock text=text test_id="node-output" />
                </details>
            }
        })
    }
}
