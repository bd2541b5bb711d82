//! `/cluster` (admins): the processes serving this database (release, heartbeat, draining),
//! the schema version, whether the database is held — a restored copy waits for an admin to
//! resume it — and the backups the servers take on their schedule. Refreshes every 5 s, as
//! often as processes write their heartbeats.

use crate::api_admin;
use crate::components::error_alert::ErrorAlert;
use crate::components::fetch::load;
use crate::components::mutation::Mutation;
use crate::components::table_parts::{Column, TableHead, TableRows};
use crate::format;
use leptos::prelude::*;
use trellis_model::api::{BackupRun, Cluster, ClusterProcess};

const PROCESS_COLUMNS: &[Column] = &[
    ("Process", ""),
    ("Release", "version"),
    ("Serves on", ""),
    ("Started", "updated"),
    ("Last seen", "updated"),
    ("State", ""),
];
const BACKUP_COLUMNS: &[Column] =
    &[("Started", "updated"), ("Outcome", ""), ("Size", "version"), ("File or error", "")];
const REFRESH_MS: u64 = 5_000;

#[component]
pub fn ClusterPage() -> impl IntoView {
    let cluster = RwSignal::new(None::<Cluster>);
    let refresh = move || load(api_admin::cluster(), move |c| cluster.set(Some(c)));
    refresh();
    let timer = set_interval_with_handle(refresh, std::time::Duration::from_millis(REFRESH_MS)).ok();
    on_cleanup(move || {
        if let Some(t) = timer {
            t.clear();
        }
    });
    let resuming = Mutation::new();
    let resume = move |_| {
        let confirmed = window()
            .confirm_with_message(
                "Resume this database? Schedules fire and work is claimed again. If the original database still \
                 runs somewhere, both will act.",
            )
            .unwrap_or(false);
        if confirmed {
            resuming.run(api_admin::resume_cluster(), move |c| cluster.set(Some(c)));
        }
    };
    let processes = Signal::derive(move || {
        cluster.with(|c| c.as_ref().map(|c| c.processes.iter().map(|p| (p.clone(), c.compatible_from)).collect()))
    });
    let backups = Signal::derive(move || cluster.with(|c| c.as_ref().map(|c| c.backups.clone())));

    view! {
        <main class="page wide">
            <div class="toolbar"><h1>"Cluster"</h1></div>
            {move || cluster.with(|c| c.as_ref().map(summary))}
            {move || cluster.with(|c| c.as_ref().filter(|c| c.held).map(|c| view! {
                <section class="held" role="alert" data-testid="cluster-held">
                    <h2>"This database is held"</h2>
                    <p>{held_words(c)}</p>
                    <p>"No schedule fires and no work is claimed until you resume it. Starts are accepted and wait."</p>
                    <button class="primary" data-testid="cluster-resume" disabled=resuming.pending() on:click=resume>
                        {move || if resuming.pending().get() { "Resuming…" } else { "Resume" }}
                    </button>
                </section>
            }))}
            <ErrorAlert message=resuming.error() />
            <h2 class="section-title">"Processes"</h2>
            <table class="workflows cluster" data-testid="cluster-processes">
                <TableHead columns=PROCESS_COLUMNS />
                <TableRows rows=processes columns=PROCESS_COLUMNS.len() empty="No process has a heartbeat." row=process_row />
            </table>
            <h2 class="section-title">"Scheduled backups"</h2>
            {move || cluster.with(|c| c.as_ref().map(schedule_words))}
            <table class="workflows cluster" data-testid="cluster-backups">
                <TableHead columns=BACKUP_COLUMNS />
                <TableRows rows=backups columns=BACKUP_COLUMNS.len() empty="No scheduled backup yet." row=backup_row />
            </table>
        </main>
    }
}

fn summary(c: &Cluster) -> impl IntoView {
    let alive = c.processes.iter().filter(|p| p.alive).count();
    let releases: std::collections::BTreeSet<&str> =
        c.processes.iter().filter(|p| p.alive).map(|p| p.version.as_str()).collect();
    let releases = releases.into_iter().collect::<Vec<_>>().join(", ");
    view! {
        <p class="muted" data-testid="cluster-summary">
            {format!("Schema version {} · {alive} process{} serving · release {releases}", c.schema_version, if alive == 1 { "" } else { "es" })}
        </p>
    }
}

fn held_words(c: &Cluster) -> String {
    let reason = c.held_reason.as_deref().map_or_else(|| "Held".to_owned(), capitalized);
    match c.held_since {
        Some(since) => format!("{reason} (held since {}).", format::timestamp(&since)),
        None => format!("{reason}."),
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

fn schedule_words(c: &Cluster) -> impl IntoView {
    let words = match &c.backup_schedule {
        Some(s) => format!("Every {} into {}, keeping the newest {}.", every(s.every_secs), s.dir, s.keep),
        None => "This server takes no scheduled backups: set TRELLIS_BACKUP_DIR (and TRELLIS_BACKUP_EVERY, \
                 TRELLIS_BACKUP_KEEP), or run `trellis backup create`."
            .to_owned(),
    };
    view! { <p class="muted" data-testid="cluster-schedule">{words}</p> }
}

/// "1 h", "30 min", "45 s": a period at a glance.
fn every(secs: u64) -> String {
    match secs {
        s if s % 86_400 == 0 => format!("{} d", s / 86_400),
        s if s % 3_600 == 0 => format!("{} h", s / 3_600),
        s if s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

fn process_row((p, compatible_from): (ClusterProcess, i64)) -> impl IntoView {
    let state = match (p.alive, p.draining) {
        (false, _) => "Gone (no heartbeat)".to_owned(),
        (true, _) if p.schema_known < compatible_from => {
            format!("Too old: claims no work (knows schema {}, needs {compatible_from})", p.schema_known)
        }
        (true, true) => "Draining".to_owned(),
        (true, false) => "Serving".to_owned(),
    };
    view! {
        <tr data-testid="cluster-process" class:failed=!p.alive>
            <td class="name" title=p.id.clone()>
                {format!("{} · pid {}", p.host, p.pid)}
                {p.this_process.then(|| view! { " " <span class="muted">"(this page's)"</span> })}
            </td>
            <td class="version">{p.version.clone()}</td>
            <td><code>{p.listen.clone()}</code></td>
            <td class="updated" title=format::rfc3339(&p.started_at)>{format::timestamp(&p.started_at)}</td>
            <td class="updated" title=format::rfc3339(&p.last_seen)>{seen_ago(p.last_seen)}</td>
            <td>{state}</td>
        </tr>
    }
}

fn backup_row(b: BackupRun) -> impl IntoView {
    let detail = b.file.clone().or(b.error.clone()).unwrap_or_default();
    view! {
        <tr data-testid="cluster-backup" class:failed=(b.outcome == "failed")>
            <td class="updated" title=format::rfc3339(&b.started_at)>{format::timestamp(&b.started_at)}</td>
            <td>{b.outcome.clone()}</td>
            <td class="version">{b.bytes.map(size).unwrap_or_default()}</td>
            <td class="error" title=detail.clone()>{format::cut(&detail, 120)}</td>
        </tr>
    }
}

/// "4 s ago", "3 min ago", or the time once it is an hour old: heartbeats come every 5 s.
fn seen_ago(at: chrono::DateTime<chrono::Utc>) -> String {
    let secs = (crate::components::run::state::browser_now() - at).num_seconds().max(0);
    match secs {
        s if s < 60 => format!("{s} s ago"),
        s if s < 3_600 => format!("{} min ago", s / 60),
        _ => format::timestamp(&at),
    }
}

/// Bytes for people: "812 KB", "1.4 GB".
fn size(bytes: i64) -> String {
    let b = bytes as f64;
    match bytes {
        n if n < 1_000 => format!("{n} B"),
        n if n < 1_000_000 => format!("{:.0} KB", b / 1e3),
        n if n < 1_000_000_000 => format!("{:.1} MB", b / 1e6),
        _ => format!("{:.1} GB", b / 1e9),
    }
}
