//! The cluster (admins): the processes serving this database and their releases, the schema
//! version, whether the database is held (and resuming it), and the scheduled backups
//! (`crate::cluster`).

use crate::cluster::registry::is_alive;
use crate::http::middleware::authed::{AsAdmin, Authed};
use crate::http::middleware::error::ApiResult;
use crate::http::AppState;
use crate::store::{BackupRunRow, ProcessRow};
use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use trellis_model::api::{BackupRun, BackupSchedule, Cluster, ClusterProcess};
use utoipa_axum::{router::OpenApiRouter, routes};

/// Processes listed: those seen within this long (a killed one shows, not alive, for a day).
const LISTED_WITHIN: chrono::Duration = chrono::Duration::days(1);
/// Scheduled backups listed, newest first.
const BACKUPS_LISTED: i64 = 20;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(show)).routes(routes!(resume))
}

#[utoipa::path(
    get,
    path = "/cluster",
    operation_id = "getCluster",
    tag = "cluster",
    responses((status = 200, description = "The processes serving this database, its schema version, whether it is held, and the scheduled backups", body = Cluster))
)]
async fn show(State(state): State<AppState>, _: Authed<AsAdmin>) -> ApiResult<Json<Cluster>> {
    Ok(Json(cluster(&state).await?))
}

#[utoipa::path(
    post,
    path = "/cluster/resume",
    operation_id = "resumeCluster",
    tag = "cluster",
    responses((
        status = 200,
        description = "The database is no longer held: schedules fire and work is claimed again (by this process at \
                       once, by the others within a heartbeat, 5 s). Resuming a database that is not held changes nothing.",
        body = Cluster
    ))
)]
async fn resume(State(state): State<AppState>, auth: Authed<AsAdmin>) -> ApiResult<Json<Cluster>> {
    if state.store.set_hold(None, &auth.principal.name, Utc::now()).await? {
        tracing::info!(by = %auth.principal.name, "the database was resumed");
    }
    // Released here at once, unless this process is too old to run on the database at all.
    let compatible_from = state.store.hold_state().await?.compatible_from;
    let known = crate::store::newest_migration(state.store.backend());
    state.engine.hold().set(crate::cluster::compat::too_old(known, compatible_from).is_some());
    Ok(Json(cluster(&state).await?))
}

async fn cluster(state: &AppState) -> ApiResult<Cluster> {
    let now = Utc::now();
    let hold = state.store.hold_state().await?;
    let me = state.engine.process_id();
    let mut processes: Vec<ClusterProcess> =
        state.store.processes(now - LISTED_WITHIN).await?.into_iter().map(|p| shown(p, me, now)).collect();
    // Alive first; within each, the most recently seen first (as the store returns them).
    processes.sort_by_key(|p| !p.alive);
    let backups = state.store.backup_runs(BACKUPS_LISTED).await?.into_iter().map(backup_run).collect();
    let args = &state.serve.backups;
    let backup_schedule = args.dir.as_ref().map(|dir| BackupSchedule {
        dir: dir.display().to_string(),
        every_secs: args.every.as_secs(),
        keep: args.keep,
    });
    Ok(Cluster {
        schema_version: state.store.schema_version().await?,
        compatible_from: hold.compatible_from,
        held: hold.held,
        held_reason: hold.held_reason,
        held_since: hold.held_since,
        resumed_at: hold.resumed_at,
        resumed_by: hold.resumed_by,
        processes,
        backup_schedule,
        backups,
    })
}

fn shown(p: ProcessRow, me: &str, now: DateTime<Utc>) -> ClusterProcess {
    ClusterProcess {
        alive: is_alive(&p, now),
        this_process: p.id == me,
        id: p.id,
        version: p.version,
        schema_known: p.schema_known,
        host: p.host,
        pid: p.pid,
        listen: p.listen,
        started_at: p.started_at,
        last_seen: p.last_seen,
        draining: p.draining,
    }
}

fn backup_run(r: BackupRunRow) -> BackupRun {
    BackupRun {
        id: r.id.to_string(),
        process_id: r.process_id,
        started_at: r.started_at,
        finished_at: r.finished_at,
        outcome: r.outcome,
        file: r.file,
        bytes: r.bytes,
        error: r.error,
    }
}
