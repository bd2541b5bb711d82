//! `trellis workflow …`: list, show, export, import, validate, publish; `pull`, `push` and
//! `diff` keep a folder of workflow files in step with the server (see [`super::sync`]).

use super::api::Api;
use super::failure::{CliError, CliResult, Exit};
use super::files::WorkflowFile;
use super::render::{self, Output};
use super::sync;
use super::{say, Target};
use clap::{Args, Subcommand};
use reqwest::Method;
use std::path::PathBuf;
use trellis_model::api::{Page, Published, Workflow, WorkflowSummary};
use trellis_model::Report;

#[derive(Debug, Args)]
pub struct WorkflowArgs {
    #[command(subcommand)]
    pub command: WorkflowCommand,
}

#[derive(Debug, Subcommand)]
pub enum WorkflowCommand {
    /// List workflows.
    List {
        /// Only names containing this text (case-insensitive)
        #[arg(long, short = 'q')]
        query: Option<String>,
        /// Include archived workflows
        #[arg(long)]
        archived: bool,
        /// At most this many
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// A workflow and its draft's nodes.
    Show {
        /// The workflow's id or exact name
        workflow: String,
    },
    /// Print a workflow as a file `import`, `push` and `validate` read (its draft, or `--version`).
    Export {
        /// The workflow's id or exact name
        workflow: String,
        /// A published version instead of the draft
        #[arg(long)]
        version: Option<i64>,
    },
    /// Create a new workflow from a file (as `export` or `pull` write it).
    Import {
        /// A workflow file: `{"name", "description"?, "definition"}`
        file: PathBuf,
        /// Its name, instead of the file's `name`
        #[arg(long)]
        name: Option<String>,
    },
    /// Check a workflow file's definition; exits 1 when it is invalid. A file with an `id`
    /// is checked by the server (secrets, sub-workflows), one without by this client.
    Validate {
        /// A workflow file: `{"id"?, "name", "description"?, "definition"}`
        file: PathBuf,
    },
    /// Publish a workflow's draft as its next immutable version.
    Publish {
        /// The workflow's id or exact name
        workflow: String,
        /// A note kept with the version
        #[arg(long)]
        note: Option<String>,
    },
    /// Write every workflow into DIR, one `<name>.json` file each, stable formatting and key
    /// order, ready for git. Refuses a folder holding anything else, and to overwrite files
    /// changed here since the last pull or push, unless --force.
    Pull {
        /// The folder (created if missing)
        dir: PathBuf,
        /// Overwrite files changed here since the last pull or push (refused otherwise)
        #[arg(long)]
        force: bool,
    },
    /// Create or update drafts from DIR's files, showing each workflow's diff first. Refuses a
    /// draft changed on the server since the last pull or push, unless --force.
    Push {
        /// The folder of workflow files (as `pull` writes them; new files need no `id`)
        dir: PathBuf,
        /// Publish each changed workflow after saving its draft
        #[arg(long)]
        publish: bool,
        /// Only show what would change
        #[arg(long)]
        dry_run: bool,
        /// Overwrite drafts changed on the server since the last pull or push
        #[arg(long)]
        force: bool,
    },
    /// Show how DIR's files differ from the drafts on the server.
    Diff {
        /// The folder of workflow files
        dir: PathBuf,
    },
}

pub async fn run(target: &Target, args: WorkflowArgs) -> CliResult<Exit> {
    let api = target.connect()?;
    let output = target.output;
    match args.command {
        WorkflowCommand::List { query, archived, limit } => list(&api, output, query, archived, limit).await,
        WorkflowCommand::Show { workflow } => show(&api, output, &workflow).await,
        WorkflowCommand::Export { workflow, version } => export(&api, &workflow, version).await,
        WorkflowCommand::Import { file, name } => import(&api, output, &file, name).await,
        WorkflowCommand::Validate { file } => validate(&api, output, &file).await,
        WorkflowCommand::Publish { workflow, note } => publish(&api, output, &workflow, note).await,
        WorkflowCommand::Pull { dir, force } => sync::pull(&api, &dir, force).await,
        WorkflowCommand::Push { dir, publish, dry_run, force } => {
            sync::push(&api, &dir, sync::PushOptions { publish, dry_run, force }).await
        }
        WorkflowCommand::Diff { dir } => sync::push(&api, &dir, sync::PushOptions::diff_only()).await,
    }
}

/// A workflow named by id or by its exact name.
pub async fn resolve(api: &Api, workflow: &str) -> CliResult<WorkflowSummary> {
    if uuid::Uuid::parse_str(workflow).is_ok() {
        let found: Workflow = api.get(&format!("/workflows/{workflow}"), &[]).await?;
        return Ok(found.summary);
    }
    let mut named: Vec<WorkflowSummary> = matching(api, Some(workflow)).await?;
    named.retain(|w| w.name == workflow);
    match named.len() {
        1 => Ok(named.remove(0)),
        0 => Err(CliError::refused(format!("no workflow named `{workflow}`; `trellis workflow list` shows them"))),
        n => Err(CliError::usage(format!("{n} workflows are named `{workflow}`; give the id instead"))),
    }
}

/// Every workflow, following the cursor.
pub async fn all(api: &Api) -> CliResult<Vec<WorkflowSummary>> {
    matching(api, None).await
}

/// Every workflow whose name or description matches `q` (all when `None`), every page read.
async fn matching(api: &Api, q: Option<&str>) -> CliResult<Vec<WorkflowSummary>> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("limit", "200".to_owned())];
        query.extend(q.map(|q| ("q", q.to_owned())));
        query.extend(cursor.take().map(|c| ("cursor", c)));
        let page: Page<WorkflowSummary> = api.get("/workflows", &query).await?;
        items.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(items),
        }
    }
}

async fn list(api: &Api, output: Output, query: Option<String>, archived: bool, limit: i64) -> CliResult<Exit> {
    let mut params = vec![("limit", limit.to_string()), ("archived", archived.to_string())];
    params.extend(query.map(|q| ("q", q)));
    let page: Page<WorkflowSummary> = api.get("/workflows", &params).await?;
    render::list(output, &page.items, &["id", "name", "latest", "updated", "description"], |w| {
        vec![
            w.id.clone(),
            w.name.clone() + if w.archived { " (archived)" } else { "" },
            w.latest_version.map_or_else(|| "-".to_owned(), |v| format!("v{v}")),
            render::time(Some(w.updated_at)),
            render::text(w.description.as_deref(), 60),
        ]
    });
    Ok(Exit::Success)
}

async fn show(api: &Api, output: Output, workflow: &str) -> CliResult<Exit> {
    let id = resolve(api, workflow).await?.id;
    let found: Workflow = api.get(&format!("/workflows/{id}"), &[]).await?;
    let s = &found.summary;
    let fields = [
        ("id", s.id.clone()),
        ("name", s.name.clone()),
        ("description", render::text(s.description.as_deref(), 200)),
        ("latest version", s.latest_version.map_or_else(|| "none published".to_owned(), |v| v.to_string())),
        ("updated", render::time(Some(s.updated_at))),
        ("draft", format!("{} nodes, {} edges", found.draft.nodes.len(), found.draft.edges.len())),
    ];
    render::one(output, &found, &fields);
    if output == Output::Table && !found.draft.nodes.is_empty() {
        say!();
        let rows: Vec<Vec<String>> = found
            .draft
            .nodes
            .iter()
            .map(|n| {
                let next: Vec<&str> =
                    found.draft.edges.iter().filter(|e| e.from == n.id).map(|e| e.to.as_str()).collect();
                vec![n.id.clone(), n.kind.to_string(), render::text(n.name.as_deref(), 40), next.join(", ")]
            })
            .collect();
        for line in render::table(&["node", "type", "name", "then"], &rows) {
            say!("{line}");
        }
    }
    Ok(Exit::Success)
}

async fn export(api: &Api, workflow: &str, version: Option<i64>) -> CliResult<Exit> {
    let id = resolve(api, workflow).await?.id;
    let found: Workflow = api.get(&format!("/workflows/{id}"), &[]).await?;
    let mut file = WorkflowFile::of(&found)?;
    if let Some(version) = version {
        let frozen: serde_json::Value = api.get(&format!("/workflows/{id}/versions/{version}"), &[]).await?;
        file.definition = frozen.get("definition").cloned().unwrap_or_default();
    }
    // The same bytes `pull` writes: `say!` adds the final newline.
    say!("{}", file.to_text().trim_end());
    Ok(Exit::Success)
}

async fn import(api: &Api, output: Output, path: &std::path::Path, name: Option<String>) -> CliResult<Exit> {
    let mut file = WorkflowFile::read(path)?;
    if let Some(name) = name {
        file.name = name;
    }
    let body = serde_json::json!({"name": file.name, "description": file.description, "definition": file.definition});
    let created: Workflow = api.post("/workflows", &body).await?;
    let fields = [("id", created.summary.id.clone()), ("name", created.summary.name.clone())];
    render::one(output, &created, &fields);
    Ok(Exit::Success)
}

async fn validate(api: &Api, output: Output, path: &std::path::Path) -> CliResult<Exit> {
    let file = WorkflowFile::read(path)?;
    let report: Report = match &file.id {
        Some(id) => api.post(&format!("/workflows/{id}/validate"), &file.definition).await?,
        None => super::files::validate_locally(&file.definition).map_err(|e| {
            CliError::usage(format!("`{}`: `definition` is not a workflow definition: {e}", path.display()))
        })?,
    };
    match output {
        Output::Table => {
            for issue in report.errors.iter().chain(&report.warnings) {
                let node = issue.node.as_deref().map(|n| format!("node `{n}`: ")).unwrap_or_default();
                say!(
                    "{}: {node}{} [{}]",
                    if report.errors.contains(issue) { "error" } else { "warning" },
                    issue.message,
                    issue.code
                );
            }
            say!("{}: {}", path.display(), if report.valid { "valid" } else { "invalid" });
        }
        _ => render::one(output, &report, &[]),
    }
    Ok(if report.valid { Exit::Success } else { Exit::Unsuccessful })
}

async fn publish(api: &Api, output: Output, workflow: &str, note: Option<String>) -> CliResult<Exit> {
    let found = resolve(api, workflow).await?;
    let request = api
        .request(Method::POST, &format!("/workflows/{}/versions", found.id))
        .json(&serde_json::json!({"note": note}));
    let published: Published = api.json(request).await?;
    let fields = [("workflow", found.name.clone()), ("version", published.version.to_string())];
    render::one(output, &published, &fields);
    Ok(Exit::Success)
}
