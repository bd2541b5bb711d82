//! Operating the server: probes, bulk actions on instances and the jobs that carry them
//! out, and retention policies.

use super::{is_false, StatusCounts};
use crate::{JobKind, JobStatus};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `GET /healthz`: the process answers (`status` is `ok`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Health {
    pub status: String,
}

/// `GET /readyz`: the database answers too (`status` is `ready`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Ready {
    pub status: String,
    /// `postgres` or `sqlite`.
    pub database: String,
}

/// The answer to a bulk purge, cancel or retry: what the filter matches, and for a dry run a
/// `sample` of the ids it would act on, else the `job_id` and `status` of the job started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BulkAnswer {
    pub action: JobKind,
    pub dry_run: bool,
    /// The filter as the server understood it (the list's filter keys).
    pub filter: serde_json::Value,
    /// Instances the action applies to.
    pub matched: i64,
    /// Instances the filter matches that the action does not apply to (by their status).
    pub skipped: i64,
    pub by_status: StatusCounts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<JobStatus>,
}

/// A bulk job and its progress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Job {
    pub id: String,
    pub kind: JobKind,
    /// The filter as the client sent it.
    pub filter: serde_json::Value,
    pub status: JobStatus,
    pub matched: i64,
    pub processed: i64,
    pub failed: i64,
    pub error: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A retention policy with where it comes from: `scope` is `default` or a workflow id, and
/// `inherited` says a workflow follows the default. Days are `null` for "keep forever";
/// `audit_days` belongs to the default alone and is absent from a workflow's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Retention {
    pub scope: String,
    pub inherited: bool,
    pub succeeded_days: Option<i32>,
    pub failed_days: Option<i32>,
    pub canceled_days: Option<i32>,
    pub timed_out_days: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "super::double_option")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i32>))]
    pub audit_days: Option<Option<i32>>,
}

/// A webhook delivery's answer: the instance it started, or with `duplicate` the one an
/// earlier delivery with the same id started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HookAnswer {
    pub instance_id: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub duplicate: bool,
}

/// What a retention policy would delete now if saved (`POST /retention/preview`, `POST
/// /workflows/{id}/retention/preview`): the finished instances of its scope past their age,
/// which the next sweep deletes. Nothing is deleted by a preview.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RetentionPreview {
    /// `default` or the workflow's id.
    pub scope: String,
    pub instances: i64,
    /// History entries (events) those instances hold.
    pub history_entries: i64,
    pub by_status: StatusCounts,
    /// The workflows concerned, the most instances first.
    pub by_workflow: Vec<WorkflowCount>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkflowCount {
    pub workflow_id: String,
    pub workflow_name: Option<String>,
    pub count: i64,
}
