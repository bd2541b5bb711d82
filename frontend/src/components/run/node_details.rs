//! The details of the node last clicked on the run graph: its attempts (number, start, end,
//! duration, outcome, error), the last attempt's logs (scripts), its output, and its config
//! as the instance's version has it.

use crate::components::copy_button::CopyButton;
use crate::components::run::state::RunView;
use crate::components::table_parts::TableHead;
use crate::format;
use crate::run::attempts::{attempts, failed};
use crate::run::family::child_link;
use leptos::prelude::*;

const COLUMNS: &[(&str, &str)] =
    &[("Attempt", ""), ("Started", ""), ("Ended", ""), ("Duration", ""), ("Outcome", ""), ("Error", "")];

/// An attempt's instant to the millisecond (attempts are often milliseconds apart), UTC.
fn clock(at: &chrono::DateTime<chrono::Utc>) -> String {
    at.format("%H:%M:%S%.3f").to_string()
}

#[component]
pub fn NodeDetails() -> impl IntoView {
    let v = expect_context::<RunView>();
    let pretty = |value: &serde_json::Value| serde_json::to_string_pretty(value).unwrap_or_default();
    move || {
        let node = v.picked.get()?;
        let rows = v.run.with(|r| attempts(r, &node));
        // The last attempt that logged anything (a script's `console` lines).
        let logs = rows.iter().rev().find(|a| !a.logs.is_empty()).map(|a| (a.number, a.logs.clone()));
        let output = v.detail.with(|d| d.as_ref().and_then(|d| d.nodes.iter().find(|n| n.id == node)?.output.clone()));
        let child = v.detail.with(|d| d.as_ref().and_then(|d| child_link(d.nodes.iter().find(|n| n.id == node)?)));
        let config = v.definition.with(|d| {
            d.as_ref().and_then(|d| d.nodes.iter().find(|n| n.id == node)).map(|n| (n.kind.clone(), n.config.clone()))
        });
        let close = move |_| v.picked.set(None);
        Some(view! {
            <section class="node-details" data-testid="node-details" aria-label=format!("Node {node}")>
                <header>
                    <h2>"Node " <code>{node.clone()}</code> {config.as_ref().map(|(kind, _)| format!(" · {kind}"))}</h2>
                    <button type="button" on:click=close>"Close"</button>
                </header>
                {child.map(|l| view! { <p><a class="child-link" href=l.href data-testid="node-child-link">{l.text}</a></p> })}
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
                {output.map(|o| {
                    let text = pretty(&o);
                    view! {
                        <details open>
                            <summary>"Output"</summary>
                            <CopyButton text=text.clone() label="Copy output" />
                            <pre data-testid="node-output">{text}</pre>
                        </details>
                    }
                })}
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
