//! `trellis cluster …` (admins): the processes serving the database, whether it is held, and
//! resuming a held (restored) database.

use super::failure::{CliResult, Exit};
use super::render::{self, Output};
use super::{say, Target};
use clap::{Args, Subcommand};
use reqwest::Method;
use trellis_model::api::Cluster;

#[derive(Debug, Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    pub command: ClusterCommand,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// The processes, their releases, the schema version, the hold and the scheduled backups.
    Status,
    /// Let a held database (a restored copy) fire schedules and claim work again.
    Resume,
}

pub async fn run(target: &Target, args: ClusterArgs) -> CliResult<Exit> {
    let api = target.connect()?;
    let cluster: Cluster = match args.command {
        ClusterCommand::Status => api.get("/cluster", &[]).await?,
        ClusterCommand::Resume => api.json(api.request(Method::POST, "/cluster/resume")).await?,
    };
    show(target.output, &cluster);
    Ok(Exit::Success)
}

fn show(output: Output, cluster: &Cluster) {
    if output != Output::Table {
        render::one(output, cluster, &[]);
        return;
    }
    let hold = match (&cluster.held, &cluster.held_reason) {
        (true, reason) => format!(
            "HELD ({}): no schedule fires and no work is claimed until `trellis cluster resume`",
            reason.as_deref().unwrap_or("no reason recorded")
        ),
        (false, _) => "running".to_owned(),
    };
    say!("database: {hold}");
    say!("schema version: {}", cluster.schema_version);
    say!("");
    render::list(output, &cluster.processes, &["process", "release", "listen", "started", "last seen", "state"], |p| {
        let state = match (p.alive, p.draining) {
            (false, _) => "gone (no heartbeat)",
            (true, true) => "draining",
            (true, false) => "serving",
        };
        vec![
            format!("{}{}", p.id, if p.this_process { " (answered)" } else { "" }),
            p.version.clone(),
            p.listen.clone(),
            render::time(Some(p.started_at)),
            render::time(Some(p.last_seen)),
            state.to_owned(),
        ]
    });
    if let Some(schedule) = &cluster.backup_schedule {
        say!("");
        say!("backups: every {} s into {}, keeping {}", schedule.every_secs, schedule.dir, schedule.keep);
    }
    if !cluster.backups.is_empty() {
        render::list(output, &cluster.backups, &["started", "outcome", "bytes", "file or error"], |b| {
            vec![
                render::time(Some(b.started_at)),
                b.outcome.clone(),
                b.bytes.map_or_else(|| "-".to_owned(), |n| n.to_string()),
                render::text(b.file.as_deref().or(b.error.as_deref()), 80),
            ]
        });
    }
}
