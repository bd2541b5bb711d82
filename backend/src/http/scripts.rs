//! Scripts: `POST /scripts/preview` runs a `script` node's source against sample values in
//! the sandbox, threads and limits an attempt gets, so the designer can try a script before
//! publishing it. Nothing is stored.

use super::auth::{AsEditor, Authed};
use super::error::{problem, ApiError, ApiResult};
use super::extract::ApiJson;
use super::AppState;
use crate::engine::nodes::script::{self, Failure, FailureKind, Script};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::time::Duration;
use trellis_model::api::{Problem, ScriptPreview, ScriptPreviewRequest, ScriptProblem};
use trellis_model::config::{check_config, NodeKind, ScriptConfig};
use trellis_model::Issue;
use utoipa_axum::{router::OpenApiRouter, routes};

/// How long a preview waits for a free script thread on top of its own time limit.
const QUEUE_WAIT: Duration = Duration::from_secs(5);

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(preview))
}

#[utoipa::path(
    post,
    path = "/scripts/preview",
    tag = "scripts",
    request_body = ScriptPreviewRequest,
    responses(
        (status = 200, description = "What the script returned (`undefined` is `null`) and logged", body = ScriptPreview),
        (
            status = 422,
            description = "The script failed: `detail` says why, `line` and `column` where (when known), \
                           `logs` what it logged first; or its config is invalid (`errors`)",
            body = ScriptProblem,
            content_type = "application/problem+json"
        ),
        (status = 503, description = "Every script thread stayed busy; try again", body = Problem),
    )
)]
async fn preview(
    State(state): State<AppState>,
    _: Authed<AsEditor>,
    ApiJson(body): ApiJson<ScriptPreviewRequest>,
) -> ApiResult<Response> {
    let config = ScriptConfig { source: body.source, memory_mb: body.memory_mb, timeout_ms: body.timeout_ms };
    check(&config)?;
    let limits = script::limits(&config);
    let sample = Script {
        source: config.source,
        input: body.input.unwrap_or(Value::Null),
        nodes: body.nodes.unwrap_or_else(|| json!({})),
        instance: json!({"id": "preview", "workflow_id": null, "version": null, "trace_id": null,
                         "node": "preview", "attempt": 1}),
        now: chrono::Utc::now(),
        limits,
    };
    let wait = Duration::from_millis(limits.timeout_ms) + QUEUE_WAIT;
    let ran = match tokio::time::timeout(wait, script::run_script(sample)).await {
        Ok(Ok(ran)) => ran,
        Ok(Err(stopped)) => return Err(ApiError::Internal(anyhow::anyhow!(stopped))),
        Err(_) => return Err(busy()),
    };
    let output = ran.output.and_then(|output| {
        // The cap an attempt's output is held to, so a preview that passes stores too.
        match state.engine.output_caps().check("preview", &output, []) {
            Ok(()) => Ok(output),
            Err(too_big) => Err(Failure { kind: FailureKind::Output, message: too_big, at: None }),
        }
    });
    match output {
        Ok(output) => Ok(Json(ScriptPreview { output, logs: ran.logs }).into_response()),
        Err(failure) => Ok(refusal(&failure, ran.logs)),
    }
}

/// The config's own problems (an empty source, limits out of range), as a save reports them.
fn check(config: &ScriptConfig) -> ApiResult<()> {
    let value = serde_json::to_value(config).map_err(|e| ApiError::Internal(e.into()))?;
    let problems = check_config(NodeKind::Script, &value);
    if problems.is_empty() {
        return Ok(());
    }
    let issues = problems
        .into_iter()
        .map(|p| Issue::new("invalid_config", p.message).path(p.path.trim_start_matches("config.").to_owned()))
        .collect();
    Err(ApiError::invalid("the script cannot be run as given; see `errors`", issues))
}

fn busy() -> ApiError {
    ApiError::Rejected {
        status: StatusCode::SERVICE_UNAVAILABLE,
        detail: "every script thread stayed busy; try the preview again shortly".into(),
    }
}

/// A 422 naming the failure, where it happened and what was logged before it.
fn refusal(failure: &Failure, logs: Vec<String>) -> Response {
    let body = ScriptProblem {
        problem: problem(StatusCode::UNPROCESSABLE_ENTITY, script::describe(failure), Vec::new()),
        failure: kind_name(failure.kind).to_owned(),
        line: failure.at.map(|at| at.line),
        column: failure.at.map(|at| at.column),
        logs,
    };
    let mut response = (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
    response
}

fn kind_name(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Syntax => "syntax",
        FailureKind::Thrown => "thrown",
        FailureKind::Memory => "memory",
        FailureKind::Time => "time",
        FailureKind::Stack => "stack",
        FailureKind::Output => "output",
        FailureKind::Engine => "engine",
    }
}
