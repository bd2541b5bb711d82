//! `/audit` (admins): the audit log, newest first, filtered by actor, action, target and time,
//! a page at a time ("Load more").

use crate::api_admin;
use crate::audit_words::{describe, target_page};
use crate::components::paged::{LoadMore, Paged};
use crate::components::table_parts::TableHead;
use crate::format;
use crate::instance_filter::parse_time;
use crate::paged::Refresh;
use crate::urls::encode_component;
use leptos::prelude::*;

const COLUMNS: &[(&str, &str)] =
    &[("When", "updated"), ("Actor", ""), ("Action", ""), ("Target", ""), ("Status", "version"), ("Detail", "")];

/// The filter as typed: actor, action, target, since, until (`datetime-local`, read as UTC).
#[derive(Debug, Clone, Default, PartialEq)]
struct AuditFilter {
    actor: String,
    action: String,
    target: String,
    since: String,
    until: String,
}

impl AuditFilter {
    /// The query string for the API; unreadable times are left out.
    fn query(&self, cursor: Option<&str>) -> String {
        let mut parts = vec!["limit=50".to_owned()];
        for (name, value) in [("actor", &self.actor), ("action", &self.action), ("target", &self.target)] {
            if !value.trim().is_empty() {
                parts.push(format!("{name}={}", encode_component(value.trim())));
            }
        }
        for (name, value) in [("since", &self.since), ("until", &self.until)] {
            if let Some(t) = parse_time(value) {
                parts.push(format!("{name}={}", encode_component(&format::rfc3339(&t))));
            }
        }
        if let Some(c) = cursor {
            parts.push(format!("cursor={}", encode_component(c)));
        }
        parts.join("&")
    }
}

#[component]
pub fn AuditPage() -> impl IntoView {
    let filter = RwSignal::new(AuditFilter::default());
    let paged = Paged::new(Refresh::Replace, move |cursor| {
        let query = filter.get_untracked().query(cursor.as_deref());
        async move { api_admin::audit(&query).await.map(|page| (page, ())) }
    });
    paged.reload();
    let field =
        move |label: &'static str, test_id: &'static str, kind: &'static str, edit: fn(&mut AuditFilter, String)| {
            view! {
                <label>{label} " "
                    <input type=kind data-testid=test_id on:change=move |ev| {
                        let value = event_target_value(&ev);
                        filter.update(|f| edit(f, value));
                        paged.reload();
                    } />
                </label>
            }
        };

    view! {
        <main class="page wide">
            <div class="toolbar"><h1>"Audit log"</h1></div>
            <form class="inline-form" role="search" aria-label="Filter the audit log" on:submit=move |ev| { ev.prevent_default(); paged.reload() }>
                {field("Actor", "audit-actor", "search", |f, v| f.actor = v)}
                {field("Action", "audit-action", "search", |f, v| f.action = v)}
                {field("Target", "audit-target", "search", |f, v| f.target = v)}
                {field("Since", "audit-since", "datetime-local", |f, v| f.since = v)}
                {field("Until", "audit-until", "datetime-local", |f, v| f.until = v)}
            </form>
            <table class="workflows audit" data-testid="audit-table">
                <TableHead columns=COLUMNS />
                <tbody>
                    {move || paged.empty_text(|| "No entries match.".to_owned()).get().map(|text| view! {
                        <tr><td colspan="6" class="empty">{text}</td></tr>
                    })}
                    <For each=move || paged.items().get() key=|e| e.id.clone() let:e>
                        <tr data-testid="audit-row" class:failed=(e.status >= 400)>
                            <td class="updated" title=format::rfc3339(&e.at)>{format::timestamp(&e.at)}</td>
                            <td>{e.actor.name.clone()} {e.actor.role.map(|r| view! { " " <span class="muted">{r.as_str()}</span> })}</td>
                            <td>{match describe(&e.action) {
                                // The words, and the action as recorded: what the Action filter matches.
                                Some(words) => view! { {words} <br /> <code class="muted">{e.action.clone()}</code> }.into_any(),
                                None => view! { <code>{e.action.clone()}</code> }.into_any(),
                            }}</td>
                            <td>{e.target.clone().map(|target| match target_page(&e.action, &target) {
                                Some(page) => view! { <a href=page><code>{target}</code></a> }.into_any(),
                                None => view! { <code>{target}</code> }.into_any(),
                            })}</td>
                            <td class="version">{e.status}</td>
                            <td class="error">{e.detail.clone().unwrap_or_default()}</td>
                        </tr>
                    </For>
                </tbody>
            </table>
            <LoadMore paged=paged />
        </main>
    }
}
