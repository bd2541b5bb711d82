//! Bulk retry, cancel and purge: a dry run says how many instances the filter matches, the
//! user confirms (or passed `--yes`), then a job on the server does the work and this
//! follows its progress — a bar on a terminal, one line per change otherwise.

use super::api::Api;
use super::failure::{CliError, CliResult, Exit};
use super::instances::ListFilter;
use super::render::{self, Output};
use super::say;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, IsTerminal};
use std::time::Duration;
use trellis_model::api::{BulkAnswer, Job};
use trellis_model::{JobKind, JobStatus};

/// How often a running job's progress is read.
const POLL: Duration = Duration::from_millis(300);

#[derive(Debug, Clone, Args)]
pub struct BulkFilter {
    #[command(flatten)]
    pub filter: ListFilter,
    /// Act on every instance when no filter is given (an empty filter is refused otherwise)
    #[arg(long)]
    pub all: bool,
    /// Do not ask for confirmation (needed when standard input is not a terminal)
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Only say how many instances would be acted on
    #[arg(long)]
    pub dry_run: bool,
}

impl BulkFilter {
    /// With an instance ID, the filter flags make no sense.
    pub fn refuse_with_id(&self) -> CliResult<()> {
        let f = &self.filter;
        let filtered = f.workflow.is_some()
            || !f.status.is_empty()
            || f.version.is_some()
            || f.since.is_some()
            || f.until.is_some()
            || f.key.is_some()
            || f.node.is_some()
            || f.error_class.is_some()
            || !f.content.is_empty()
            || f.slow
            || self.all;
        if filtered {
            return Err(CliError::usage("give an instance ID or filters (--status, --workflow, …, --all), not both"));
        }
        Ok(())
    }
}

/// Counts, confirms, starts the job and follows it to its end.
pub async fn run(api: &Api, output: Output, kind: JobKind, args: BulkFilter) -> CliResult<Exit> {
    let filter = filter_body(api, &args.filter).await?;
    if filter.as_object().is_some_and(|f| f.is_empty()) && !args.all {
        return Err(CliError::usage(format!(
            "no filter given; narrow it (--status failed, --workflow NAME, --since …) or pass --all to {kind} every instance"
        )));
    }
    let path = format!("/instances/{kind}");
    let body = |dry_run: bool| serde_json::json!({"filter": filter, "dry_run": dry_run, "all": args.all});
    let preview: BulkAnswer = api.post(&path, &body(true)).await?;
    if args.dry_run {
        render::one(output, &preview, &summary(kind, &preview));
        return Ok(Exit::Success);
    }
    if preview.matched == 0 {
        say!("no instance to {kind} ({} matched the filter but not the action's statuses)", preview.skipped);
        return Ok(Exit::Success);
    }
    if !args.yes && !confirm(kind, &preview)? {
        say!("nothing done");
        return Ok(Exit::Unsuccessful);
    }
    let started: BulkAnswer = api.post(&path, &body(false)).await?;
    let job_id =
        started.job_id.ok_or_else(|| CliError::refused("the server started no job (no `job_id` in its answer)"))?;
    let job = follow(api, output, &job_id, started.matched).await?;
    if output != Output::Table {
        render::one(output, &job, &[]);
    }
    Ok(if job.status == JobStatus::Succeeded && job.failed == 0 { Exit::Success } else { Exit::Unsuccessful })
}

/// The filter as the bulk API takes it (the list's keys); a workflow name is looked up.
async fn filter_body(api: &Api, filter: &ListFilter) -> CliResult<serde_json::Value> {
    let mut object = serde_json::Map::new();
    let mut statuses = Vec::new();
    for (key, value) in filter.query(api).await? {
        match key.as_str() {
            "status" => statuses.push(serde_json::Value::String(value)),
            "version" => {
                object.insert(key, serde_json::json!(filter.version));
            }
            "slow" => {
                object.insert(key, serde_json::Value::Bool(filter.slow));
            }
            _ => {
                object.insert(key, serde_json::Value::String(value));
            }
        }
    }
    if !statuses.is_empty() {
        object.insert("status".to_owned(), serde_json::Value::Array(statuses));
    }
    Ok(serde_json::Value::Object(object))
}

fn summary(kind: JobKind, answer: &BulkAnswer) -> Vec<(&'static str, String)> {
    vec![
        ("action", kind.to_string()),
        ("matched", answer.matched.to_string()),
        ("skipped", format!("{} (their status does not allow {kind})", answer.skipped)),
        ("sample", answer.sample.as_deref().map_or_else(|| "-".to_owned(), |s| s.join(", "))),
    ]
}

/// Asks on the terminal; without one, `--yes` is required.
fn confirm(kind: JobKind, preview: &BulkAnswer) -> CliResult<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(CliError::usage(format!(
            "{kind} would act on {} instances; pass --yes to confirm when standard input is not a terminal",
            preview.matched
        )));
    }
    eprint!(
        "{kind} {} instances ({} more match in a status {kind} does not apply to)? [y/N] ",
        preview.matched, preview.skipped
    );
    let mut answer = String::new();
    stdin.lock().read_line(&mut answer).map_err(|e| CliError::usage(format!("cannot read the answer: {e}")))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

/// Polls the job until it ends, showing its progress.
async fn follow(api: &Api, output: Output, job_id: &str, matched: i64) -> CliResult<Job> {
    let bar = (output == Output::Table && std::io::stdout().is_terminal()).then(|| {
        // Named before the bar takes the line: interrupted, the user still knows which job runs on.
        say!("job {job_id} started; it goes on on the server if this command is interrupted");
        progress_bar(matched)
    });
    let mut last_line = String::new();
    loop {
        let job: Job = api.get(&format!("/jobs/{job_id}"), &[]).await?;
        let line = format!(
            "{} job {job_id}: {}/{} done, {} failed ({})",
            job.kind, job.processed, job.matched, job.failed, job.status
        );
        match &bar {
            Some(bar) => {
                bar.set_length(job.matched.max(0) as u64);
                bar.set_position(job.processed.max(0) as u64);
                bar.set_message(format!("{} failed", job.failed));
            }
            None if output == Output::Table && line != last_line => say!("{line}"),
            None => {}
        }
        last_line = line;
        if job.status.is_terminal() {
            if let Some(bar) = &bar {
                bar.finish_and_clear();
            }
            if output == Output::Table {
                if bar.is_some() {
                    say!("{last_line}");
                }
                if let Some(error) = &job.error {
                    say!("error: {error}");
                }
            }
            return Ok(job);
        }
        tokio::time::sleep(POLL).await;
    }
}

fn progress_bar(length: i64) -> ProgressBar {
    let bar = ProgressBar::new(length.max(0) as u64);
    let style = ProgressStyle::with_template("{spinner} [{bar:40}] {pos}/{len} {msg} ({eta} left)")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}
