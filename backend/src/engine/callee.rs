//! Whether a workflow can be called by a `subworkflow` node at a version: one judgement for
//! publishing (every problem, each reported at the node's field) and for running (the first
//! problem fails the node for good).

use crate::store::WorkflowRecord;
use trellis_model::config::VersionRef;

/// What stops a call of a workflow from running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalleeProblem {
    Archived,
    Unpublished,
    /// The pinned version does not exist.
    NoVersion {
        wanted: i64,
        latest: i64,
    },
}

impl CalleeProblem {
    /// The issue code publishing reports it under.
    pub fn code(self) -> &'static str {
        match self {
            CalleeProblem::Archived => "archived_workflow",
            CalleeProblem::Unpublished => "unpublished_workflow",
            CalleeProblem::NoVersion { .. } => "unknown_version",
        }
    }

    /// The field of the node's config it is about.
    pub fn field(self) -> &'static str {
        match self {
            CalleeProblem::NoVersion { .. } => "version",
            _ => "workflow",
        }
    }

    /// What is wrong, after `callee` (how the caller names the workflow).
    pub fn describe(self, callee: &str) -> String {
        match self {
            CalleeProblem::Archived => format!("{callee} is archived; unarchive it or call another workflow"),
            CalleeProblem::Unpublished => format!("{callee} has no published version; publish it first"),
            CalleeProblem::NoVersion { wanted, latest } => {
                format!("{callee} has no version {wanted} (its latest is {latest})")
            }
        }
    }
}

/// The version a call of `record` at `version` runs (`latest` resolved now), or everything
/// that stops it.
pub fn resolve(record: &WorkflowRecord, version: VersionRef) -> Result<i64, Vec<CalleeProblem>> {
    let mut problems = Vec::new();
    if record.archived {
        problems.push(CalleeProblem::Archived);
    }
    let resolved = match (record.latest_version, version) {
        (None, _) => {
            problems.push(CalleeProblem::Unpublished);
            None
        }
        (Some(latest), VersionRef::Latest) => Some(latest),
        (Some(latest), VersionRef::Pinned(n)) if (1..=latest).contains(&n) => Some(n),
        (Some(latest), VersionRef::Pinned(wanted)) => {
            problems.push(CalleeProblem::NoVersion { wanted, latest });
            None
        }
    };
    match resolved {
        Some(version) if problems.is_empty() => Ok(version),
        _ => Err(problems),
    }
}

/// The version of `workflow` a call runs now (`latest` resolved), or why it cannot run, named
/// as `label` ("the called workflow"); `Err` when the store could not be read.
pub async fn version_to_run(
    catalog: &dyn crate::store::CatalogStore,
    workflow: uuid::Uuid,
    version: VersionRef,
    label: &str,
) -> crate::store::Result<Result<i64, String>> {
    let Some(record) = catalog.get_workflow(workflow).await? else {
        return Ok(Err(format!("{label} {workflow} does not exist")));
    };
    Ok(resolve(&record, version)
        .map_err(|problems| problems[0].describe(&format!("{label} `{}` ({workflow})", record.name))))
}
