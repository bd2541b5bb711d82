//! Scripts: trying a `script` node's source against sample values before publishing it.

use super::Problem;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /scripts/preview`: runs `source` (a function body) with the limits an attempt of a
/// node with this config would have. `input` and `nodes` stand in for the instance's (both
/// `null` and `{}` when absent); `instance` is a stand-in with `"id": "preview"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ScriptPreviewRequest {
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// `{"<node id>": {"output": ...}}`, as `nodes` reads in the script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// What the script returned (`undefined` is `null`) and what it logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScriptPreview {
    pub output: Value,
    pub logs: Vec<String>,
}

/// A script that failed in preview: a 422 problem whose `detail` is the failure, with where
/// in the script (when known) and what it logged before failing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ScriptProblem {
    #[serde(flatten)]
    pub problem: Problem,
    /// `syntax`, `thrown`, `memory`, `time`, `stack` (nesting too deep), `output` (the return
    /// value cannot be stored as JSON) or `engine`. Absent from the other 422 of the preview, a
    /// config that cannot run (`errors` says what to fix), which is a plain problem.
    #[cfg_attr(feature = "openapi", schema(required = false))]
    pub failure: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(default)]
    pub logs: Vec<String>,
}
