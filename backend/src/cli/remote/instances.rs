//! `trellis instance …`: start, list, show, history, watch, and the actions on one instance.
//! `retry`, `cancel` and `purge` without an ID act on every instance a filter matches
//! (see [`super::bulk`]).

use super::api::Api;
use super::bulk::{self, BulkFilter};
use super::failure::{CliError, CliResult, Exit};
use super::input::json_argument;
pub use super::list_filter::ListFilter;
use super::render::{self, Output};
use super::{say, watch, workflows, Target};
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{json, Value};
use trellis_model::api::{History, InstanceDetail, InstancePage, InstanceSummary, Started};
use trellis_model::JobKind;

#[derive(Debug, Args)]
pub struct InstanceArgs {
    #[command(subcommand)]
    pub command: InstanceCommand,
}

#[derive(Debug, Subcommand)]
pub enum InstanceCommand {
    /// Start an instance of a workflow's latest published version (or `--version`).
    #[command(after_help = "Examples:\n  trellis instance start deploy --input '{\"env\": \"prod\"}' --wait\n  \
                            trellis instance start 0190c0de-… --input @input.json --key order-42")]
    Start(StartArgs),
    /// List instances, newest first, with the list's filters.
    List(ListArgs),
    /// An instance with its nodes.
    Show {
        /// The instance's id
        #[arg(value_parser = instance_id)]
        id: String,
    },
    /// An instance's history: every status change and span, in order.
    History {
        /// The instance's id
        #[arg(value_parser = instance_id)]
        id: String,
        /// Only entries after this `seq`
        #[arg(long, default_value_t = 0)]
        after: i64,
        /// At most this many entries
        #[arg(long, default_value_t = 1000)]
        limit: i64,
    },
    /// Follow an instance live, one line per node change, until it ends. Exits 0 when it
    /// succeeded, 1 otherwise; reconnects (with `Last-Event-ID`) when the connection drops.
    Watch {
        /// The instance's id
        #[arg(value_parser = instance_id)]
        id: String,
    },
    /// Retry one instance (`ID`), or every instance the filter matches (a bulk job).
    Retry(RetryArgs),
    /// Cancel one instance (`ID`), or every unfinished instance the filter matches.
    Cancel(ActionArgs),
    /// Purge one finished instance and its history (`ID`), or every finished one the filter matches.
    Purge(ActionArgs),
    /// Pause a running instance: running nodes finish, no new node starts.
    Pause {
        /// The instance's id
        #[arg(value_parser = instance_id)]
        id: String,
    },
    /// Resume a paused instance.
    Resume {
        /// The instance's id
        #[arg(value_parser = instance_id)]
        id: String,
    },
    /// Send a signal to a `wait_signal` node.
    Signal {
        /// The instance's id
        #[arg(value_parser = instance_id)]
        id: String,
        /// The `wait_signal` node's id
        node: String,
        /// The signal's payload: JSON, `@file` or `@-` (standard input)
        #[arg(long, value_name = "JSON")]
        payload: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// The workflow's id or exact name
    pub workflow: String,
    /// The input: JSON, `@file` or `@-` (standard input)
    #[arg(long, value_name = "JSON")]
    pub input: Option<String>,
    /// Run this published version instead of the latest
    #[arg(long)]
    pub version: Option<i64>,
    /// A business key, to find the instance again (`instance list --key`)
    #[arg(long)]
    pub key: Option<String>,
    /// Repeating a start with the same key returns the first instance instead of a new one
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Wait until the instance ends; exit 0 only when it succeeded
    #[arg(long)]
    pub wait: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: ListFilter,
    /// At most this many instances (the server allows up to 500)
    #[arg(long, default_value_t = 50)]
    pub limit: i64,
    /// Continue after a previous page (the `next_cursor` it printed)
    #[arg(long)]
    pub cursor: Option<String>,
}

#[derive(Debug, Args)]
pub struct RetryArgs {
    #[command(flatten)]
    pub action: ActionArgs,
    /// Where to start again: `failed` (the failed nodes), `start`, or a node id (one instance only)
    #[arg(long, default_value = "failed")]
    pub from: String,
    /// Run the workflow's latest published version instead of the instance's (one instance only)
    #[arg(long)]
    pub latest: bool,
}

#[derive(Debug, Args)]
pub struct ActionArgs {
    /// The instance; leave it out to act on every instance the filter matches
    #[arg(value_parser = instance_id)]
    pub id: Option<String>,
    #[command(flatten)]
    pub bulk: BulkFilter,
}

pub async fn run(target: &Target, args: InstanceArgs) -> CliResult<Exit> {
    // Local mistakes (invalid JSON, a missing file) are said before any server is asked.
    let given_json = match &args.command {
        InstanceCommand::Start(start) => start.input.as_deref().map(|text| json_argument(text, "--input")),
        InstanceCommand::Signal { payload, .. } => payload.as_deref().map(|text| json_argument(text, "--payload")),
        _ => None,
    }
    .transpose()?;
    let api = target.connect()?;
    let output = target.output;
    match args.command {
        InstanceCommand::Start(start_args) => start(&api, output, start_args, given_json).await,
        InstanceCommand::List(list_args) => list(&api, output, list_args).await,
        InstanceCommand::Show { id } => show(&api, output, &id).await,
        InstanceCommand::History { id, after, limit } => history(&api, output, &id, after, limit).await,
        InstanceCommand::Watch { id } => watch::watch(&api, output, &id).await,
        InstanceCommand::Retry(retry) => match retry.action.id {
            Some(id) => {
                retry.action.bulk.refuse_with_id()?;
                let body = json!({"from": retry.from, "latest_version": retry.latest});
                act(&api, output, &id, "retry", Some(body)).await
            }
            None if retry.from != "failed" || retry.latest => Err(CliError::usage(
                "--from and --latest apply to one instance; a bulk retry re-runs each instance's failed nodes",
            )),
            None => bulk::run(&api, output, JobKind::Retry, retry.action.bulk).await,
        },
        InstanceCommand::Cancel(action) => match action.id {
            Some(id) => {
                action.bulk.refuse_with_id()?;
                act(&api, output, &id, "cancel", None).await
            }
            None => bulk::run(&api, output, JobKind::Cancel, action.bulk).await,
        },
        InstanceCommand::Purge(action) => match action.id {
            Some(id) => purge(&api, &id, action.bulk).await,
            None => bulk::run(&api, output, JobKind::Purge, action.bulk).await,
        },
        InstanceCommand::Pause { id } => act(&api, output, &id, "pause", None).await,
        InstanceCommand::Resume { id } => act(&api, output, &id, "resume", None).await,
        InstanceCommand::Signal { id, node, .. } => {
            let payload = given_json.unwrap_or(Value::Null);
            act(&api, output, &id, "signal", Some(json!({"node": node, "payload": payload}))).await
        }
    }
}

async fn start(api: &Api, output: Output, args: StartArgs, input: Option<Value>) -> CliResult<Exit> {
    let workflow = workflows::resolve(api, &args.workflow).await?;
    let body = json!({"input": input, "version": args.version, "key": args.key});
    let mut request = api.request(Method::POST, &format!("/workflows/{}/instances", workflow.id)).json(&body);
    if let Some(key) = &args.idempotency_key {
        request = request.header("Idempotency-Key", key);
    }
    let started: Started = api.json(request).await?;
    if !args.wait {
        let fields = [
            ("id", started.id.clone()),
            ("status", started.status.to_string()),
            ("version", started.version.to_string()),
        ];
        render::one(output, &started, &fields);
        return Ok(Exit::Success);
    }
    if output == Output::Table {
        eprintln!("started {} ({} v{}); waiting for it to end…", started.id, workflow.name, started.version);
    }
    watch::wait(api, &started.id).await?;
    let detail: InstanceDetail = api.get(&format!("/instances/{}", started.id), &[]).await?;
    print_detail(output, &detail);
    Ok(outcome(&detail))
}

/// Exit 0 for a succeeded instance, 1 for any other end.
pub fn outcome(detail: &InstanceDetail) -> Exit {
    if detail.summary.status == trellis_model::InstanceStatus::Succeeded {
        Exit::Success
    } else {
        Exit::Unsuccessful
    }
}

async fn list(api: &Api, output: Output, args: ListArgs) -> CliResult<Exit> {
    let mut query = args.filter.query(api).await?;
    query.push(("limit".to_owned(), args.limit.to_string()));
    if let Some(cursor) = args.cursor {
        query.push(("cursor".to_owned(), cursor));
    }
    let pairs: Vec<(&str, String)> = query.iter().map(|(name, value)| (name.as_str(), value.clone())).collect();
    let page: InstancePage = api.get("/instances", &pairs).await?;
    render::list(output, &page.items, &["id", "workflow", "version", "status", "key", "created", "took", "error"], row);
    if output == Output::Table {
        if let Some(cursor) = page.next_cursor {
            eprintln!("(more: --cursor {cursor})");
        }
    }
    Ok(Exit::Success)
}

fn row(i: &InstanceSummary) -> Vec<String> {
    vec![
        i.id.clone(),
        i.workflow_name.clone().unwrap_or_else(|| i.workflow_id.clone()),
        i.version.to_string(),
        i.status.to_string(),
        render::text(i.key.as_deref(), 24),
        render::time(Some(i.created_at)),
        render::duration(i.started_at, i.ended_at),
        render::text(i.error.as_deref(), 50),
    ]
}

async fn show(api: &Api, output: Output, id: &str) -> CliResult<Exit> {
    let detail: InstanceDetail = api.get(&format!("/instances/{id}"), &[]).await?;
    print_detail(output, &detail);
    Ok(Exit::Success)
}

/// The instance's fields, then its nodes as a table.
pub fn print_detail(output: Output, detail: &InstanceDetail) {
    let s = &detail.summary;
    let fields = [
        ("id", s.id.clone()),
        ("workflow", format!("{} ({})", s.workflow_name.as_deref().unwrap_or("?"), s.workflow_id)),
        ("version", s.version.to_string()),
        ("status", s.status.to_string()),
        ("key", render::text(s.key.as_deref(), 200)),
        ("created", render::time(Some(s.created_at))),
        ("took", render::duration(s.started_at, s.ended_at)),
        ("error", render::text(s.error.as_deref(), 500)),
        ("output", detail.output.as_ref().map_or_else(|| "-".to_owned(), render::compact)),
    ];
    render::one(output, detail, &fields);
    if output == Output::Table && !detail.nodes.is_empty() {
        say!();
        let rows: Vec<Vec<String>> = detail
            .nodes
            .iter()
            .map(|n| {
                vec![
                    n.id.clone(),
                    n.status.to_string(),
                    n.attempts.to_string(),
                    render::duration(n.started_at, n.ended_at),
                    render::text(n.error.as_deref(), 60),
                ]
            })
            .collect();
        for line in render::table(&["node", "status", "attempts", "took", "error"], &rows) {
            say!("{line}");
        }
    }
}

async fn history(api: &Api, output: Output, id: &str, after: i64, limit: i64) -> CliResult<Exit> {
    let query = [("after", after.to_string()), ("limit", limit.to_string())];
    let page: History = api.get(&format!("/instances/{id}/history"), &query).await?;
    render::list(output, &page.items, &["seq", "at", "event", "what"], |e| {
        vec![e.seq.to_string(), render::time(Some(e.at)), e.event.clone(), watch::describe(e)]
    });
    Ok(Exit::Success)
}

/// `POST /instances/{id}/{action}`, then the instance as it is now.
async fn act(api: &Api, output: Output, id: &str, action: &str, body: Option<Value>) -> CliResult<Exit> {
    let request = api.request(Method::POST, &format!("/instances/{id}/{action}")).json(&body.unwrap_or(json!({})));
    let detail: InstanceDetail = api.json(request).await?;
    if output == Output::Table {
        say!("{action}: instance {id} is now {}", detail.summary.status);
    } else {
        print_detail(output, &detail);
    }
    Ok(Exit::Success)
}

async fn purge(api: &Api, id: &str, filter: BulkFilter) -> CliResult<Exit> {
    filter.refuse_with_id()?;
    api.call(api.request(Method::DELETE, &format!("/instances/{id}"))).await?;
    say!("purged instance {id} and its history");
    Ok(Exit::Success)
}

/// An instance id as typed: a UUID (so a typo is a usage error, and nothing typed reaches the
/// request path but the id itself), written the way the server writes it.
fn instance_id(text: &str) -> Result<String, String> {
    uuid::Uuid::parse_str(text.trim())
        .map(|id| id.to_string())
        .map_err(|_| format!("`{text}` is not an instance id (a UUID, as `trellis instance list` shows)"))
}
