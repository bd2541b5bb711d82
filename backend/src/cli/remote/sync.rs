//! `workflow pull DIR`, `push DIR` and `diff DIR`: a folder of workflow files (see
//! [`super::files`]) kept in step with the drafts on a server, for keeping workflows in git.

use super::api::Api;
use super::failure::{CliError, CliResult, Exit};
use super::files::{self, hidden, slug, workflow_files, write_if_changed, SyncState, WorkflowFile};
use super::input::read_file;
use super::say;
use super::workflows::all;
use reqwest::Method;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use trellis_model::api::{Published, Workflow};

/// `pull`: every (unarchived) workflow's draft into `dir`. A file edited here since the last
/// pull or push is not overwritten (or removed) unless `force`.
pub async fn pull(api: &Api, dir: &Path, force: bool) -> CliResult<Exit> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::usage(format!("cannot create `{}`: {e}", dir.display())))?;
    let local = owned_files(dir)?;
    let mut workflows = Vec::new();
    for summary in all(api).await? {
        workflows.push(api.get::<Workflow>(&format!("/workflows/{}", summary.id), &[]).await?);
    }
    let names = file_names(&workflows);
    let mut texts = Vec::new();
    for workflow in &workflows {
        texts.push((names[&workflow.summary.id].clone(), WorkflowFile::of(workflow)?.to_text()));
    }
    // Files of workflows renamed or gone from the server: the folder mirrors the server.
    let leaving: Vec<(PathBuf, &'static str)> = local
        .into_iter()
        .filter_map(|(path, id)| {
            let current = names.get(id.as_ref()?);
            let renamed = current.is_some_and(|name| path.file_name().is_none_or(|n| n != name.as_str()));
            (current.is_none() || renamed)
                .then_some((path, if renamed { "renamed" } else { "no longer on the server" }))
        })
        .collect();
    if !force {
        refuse_local_edits(dir, &SyncState::read(dir)?, &texts, &leaving)?;
    }
    let mut state = SyncState { server: api.base.clone(), ..SyncState::default() };
    let (mut written, mut unchanged) = (0, 0);
    for (workflow, (name, text)) in workflows.iter().zip(&texts) {
        if write_if_changed(&dir.join(name), text)? {
            say!("wrote {name}");
            written += 1;
        } else {
            unchanged += 1;
        }
        state.etags.insert(workflow.summary.id.clone(), workflow.etag.clone());
        state.synced(name, text);
    }
    for (path, why) in &leaving {
        std::fs::remove_file(path).map_err(|e| CliError::usage(format!("cannot remove `{}`: {e}", path.display())))?;
        say!("removed {} ({why})", display(path));
    }
    state.write(dir)?;
    say!("pulled {} workflows into {} ({written} written, {unchanged} unchanged)", workflows.len(), dir.display());
    Ok(Exit::Success)
}

/// Refuses a pull that would overwrite or remove a file changed here since the last pull or
/// push (its bytes are not the ones recorded then), naming every such file.
fn refuse_local_edits(
    dir: &Path,
    previous: &SyncState,
    texts: &[(String, String)],
    leaving: &[(PathBuf, &str)],
) -> CliResult<()> {
    let overwritten = texts.iter().map(|(name, text)| (dir.join(name), Some(text.as_str())));
    let removed = leaving.iter().map(|(path, _)| (path.clone(), None));
    let mut edited = Vec::new();
    for (path, new_text) in overwritten.chain(removed) {
        let Ok(old) = std::fs::read_to_string(&path) else { continue };
        if Some(old.as_str()) != new_text && !previous.left_as_synced(&display(&path), &old) {
            edited.push(display(&path));
        }
    }
    if edited.is_empty() {
        return Ok(());
    }
    Err(CliError::refused(format!(
        "{} changed in {} since the last pull or push; push them first (or commit or copy them), or pull with --force \
         to overwrite them",
        edited.join(", "),
        dir.display()
    )))
}

/// The workflow files already in `dir` with the id each names; anything else in the folder
/// (but hidden entries such as `.git`) is refused, so a pull never mixes with other files.
fn owned_files(dir: &Path) -> CliResult<Vec<(PathBuf, Option<String>)>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CliError::usage(format!("cannot read the folder `{}`: {e}", dir.display())))?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let is_json = path.extension().is_some_and(|x| x == "json");
        if !hidden(&path) && (!is_json || path.is_dir()) {
            return Err(CliError::usage(format!(
                "`{}` holds `{}`, which is not a workflow file; pull into an empty folder or one `trellis workflow pull` wrote",
                dir.display(),
                entry.file_name().to_string_lossy()
            )));
        }
    }
    workflow_files(dir)?
        .into_iter()
        .map(|path| {
            WorkflowFile::read(&path)
                .map(|file| (path.clone(), file.id))
                .map_err(|e| CliError::usage(format!("{}; pull into a folder of workflow files only", e.message)))
        })
        .collect()
}

/// A file name per workflow: its name's slug, with the id's start when two share a slug.
fn file_names(workflows: &[Workflow]) -> HashMap<String, String> {
    let mut by_slug: HashMap<String, usize> = HashMap::new();
    for w in workflows {
        *by_slug.entry(slug(&w.summary.name)).or_default() += 1;
    }
    workflows
        .iter()
        .map(|w| {
            let base = slug(&w.summary.name);
            let name = if by_slug[&base] > 1 {
                format!("{base}-{}.json", w.summary.id.chars().take(8).collect::<String>())
            } else {
                format!("{base}.json")
            };
            (w.summary.id.clone(), name)
        })
        .collect()
}

#[derive(Debug, Clone, Copy)]
pub struct PushOptions {
    pub publish: bool,
    pub dry_run: bool,
    pub force: bool,
}

impl PushOptions {
    /// `workflow diff`: a push that stops after showing what would change.
    pub fn diff_only() -> PushOptions {
        PushOptions { publish: false, dry_run: true, force: true }
    }
}

/// One file compared with its workflow on the server.
struct Planned {
    path: PathBuf,
    file: WorkflowFile,
    /// The workflow on the server, `None` for one to create.
    server: Option<Workflow>,
    changed: bool,
    /// Its draft changed on the server since the last pull or push.
    stale: bool,
}

/// `push` (and `diff`): compare every file, show the diffs, refuse stale or invalid drafts,
/// then write what changed.
pub async fn push(api: &Api, dir: &Path, options: PushOptions) -> CliResult<Exit> {
    let mut state = SyncState::read(dir)?;
    if !state.server.is_empty() && state.server != api.base && !options.force {
        return Err(CliError::refused(format!(
            "{} was pulled from {}, not {}; push to that server, or pass --force to write these files here",
            display(dir),
            state.server,
            api.base
        )));
    }
    let plan = plan(api, dir, &state).await?;
    for p in &plan {
        show_change(dir, p);
    }
    let changed = plan.iter().filter(|p| p.changed).count();
    if options.dry_run {
        say!("{changed} of {} workflows differ from the server", plan.len());
        return Ok(Exit::Success);
    }
    let stale: Vec<String> = plan.iter().filter(|p| p.changed && p.stale).map(|p| display(&p.path)).collect();
    if !stale.is_empty() && !options.force {
        return Err(CliError::refused(format!(
            "the drafts of {} changed on the server since the last pull or push; pull them again (and redo your edits) \
             or push with --force to overwrite them",
            stale.join(", ")
        )));
    }
    check_valid(api, &plan).await?;
    for p in plan {
        if p.changed {
            let saved = write(api, &p, &state, options.force).await?;
            if options.publish {
                let request = api
                    .request(Method::POST, &format!("/workflows/{}/versions", saved.summary.id))
                    .json(&serde_json::json!({}));
                let published: Published = api.json(request).await?;
                say!("published {} as version {}", saved.summary.name, published.version);
            }
            if p.file.id.is_none() {
                // A new workflow: its file learns the id, so the next push updates it.
                let with_id = WorkflowFile { id: Some(saved.summary.id.clone()), ..p.file.clone() };
                write_if_changed(&p.path, &with_id.to_text())?;
            }
            state.server = api.base.clone();
            state.etags.insert(saved.summary.id.clone(), saved.etag.clone());
        }
        // The file as it is now matches the server, so a later pull may overwrite it. Recorded
        // after each workflow: a push that fails half way leaves the ones it wrote current.
        state.synced(&display(&p.path), &read_file(&p.path, "workflow file")?);
        state.write(dir)?;
    }
    say!("pushed {changed} workflows");
    Ok(Exit::Success)
}

async fn plan(api: &Api, dir: &Path, state: &SyncState) -> CliResult<Vec<Planned>> {
    let summaries = all(api).await?;
    let mut plan = Vec::new();
    for path in workflow_files(dir)? {
        let file = WorkflowFile::read(&path)?;
        let id = match &file.id {
            Some(id) => Some(id.clone()),
            None => summaries.iter().find(|s| s.name == file.name).map(|s| s.id.clone()),
        };
        let server =
            match &id {
                Some(id) => Some(api.get::<Workflow>(&format!("/workflows/{id}"), &[]).await.map_err(|e| {
                    CliError { message: format!("{}: workflow {id}: {}", display(&path), e.message), ..e }
                })?),
                None => None,
            };
        let (changed, stale) = match &server {
            Some(server) => {
                let theirs = WorkflowFile::of(server)?;
                let ours = WorkflowFile { id: theirs.id.clone(), ..file.as_saved() };
                let stale = state.etags.get(&server.summary.id).is_none_or(|etag| *etag != server.etag);
                (ours.to_text() != theirs.to_text(), stale)
            }
            None => (true, false),
        };
        plan.push(Planned { path, file, server, changed, stale });
    }
    Ok(plan)
}

/// A unified diff from the server's draft to the file (or the whole file for a new one).
fn show_change(dir: &Path, p: &Planned) {
    let name = display(&p.path);
    let Some(server) = &p.server else {
        say!("{name}: new workflow `{}`", p.file.name);
        return;
    };
    if !p.changed {
        say!("{name}: unchanged");
        return;
    }
    let theirs = WorkflowFile::of(server).map(|f| f.to_text()).unwrap_or_default();
    let ours = WorkflowFile { id: Some(server.summary.id.clone()), ..p.file.as_saved() }.to_text();
    let stale = if p.stale { " (the server's draft changed since the last pull)" } else { "" };
    say!("{name}: changed{stale}");
    let diff = similar::TextDiff::from_lines(&theirs, &ours);
    let server_side = format!("server/{}", server.summary.name);
    let local_side = dir.join(&name).display().to_string();
    say!("{}", diff.unified_diff().context_radius(3).header(&server_side, &local_side));
}

/// Every changed definition is checked before anything is written.
async fn check_valid(api: &Api, plan: &[Planned]) -> CliResult<()> {
    for p in plan.iter().filter(|p| p.changed) {
        let report: trellis_model::Report = match &p.server {
            Some(server) => api.post(&format!("/workflows/{}/validate", server.summary.id), &p.file.definition).await?,
            None => files::validate_locally(&p.file.definition).map_err(|e| {
                CliError::usage(format!("{}: `definition` is not a workflow definition: {e}", display(&p.path)))
            })?,
        };
        if !report.valid {
            let problems: Vec<String> = report.errors.iter().map(|i| i.message.clone()).collect();
            return Err(CliError::usage(format!(
                "{} is not a valid workflow ({}); nothing was pushed",
                display(&p.path),
                problems.join("; ")
            )));
        }
    }
    Ok(())
}

/// Creates the workflow, or updates its name, description and draft.
async fn write(api: &Api, p: &Planned, state: &SyncState, force: bool) -> CliResult<Workflow> {
    let file = &p.file;
    let Some(server) = &p.server else {
        let body =
            serde_json::json!({"name": file.name, "description": file.description, "definition": file.definition});
        let created: Workflow = api.post("/workflows", &body).await?;
        say!("created {} ({})", created.summary.name, created.summary.id);
        return Ok(created);
    };
    let id = &server.summary.id;
    let mut saved = server.clone();
    if file.name != server.summary.name || file.description != server.summary.description {
        let body = serde_json::json!({"name": file.name, "description": file.description});
        saved = api.json(api.request(Method::PATCH, &format!("/workflows/{id}")).json(&body)).await?;
    }
    let theirs = WorkflowFile::of(server)?;
    if files::sorted(&theirs.definition) != files::normalized(&file.definition) {
        let if_match = match state.etags.get(id) {
            Some(etag) if !force => etag.clone(),
            _ => "*".to_owned(),
        };
        let request = api
            .request(Method::PUT, &format!("/workflows/{id}/draft"))
            .header("if-match", if_match)
            .json(&file.definition);
        saved = api.json(request).await?;
    }
    say!("updated {} ({id})", saved.summary.name);
    Ok(saved)
}

fn display(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
