//! Scripts: `POST /scripts/preview` runs a `script` node's source against sample values in
//! the sandbox workers and with the limits an attempt gets, so the designer can try a script before
//! publishing it. Nothing is stored.

use crate::engine::nodes::script;
use crate::http::middleware::authed::{AsEditor, Authed};
use crate::http::middleware::error::{problem, ApiError, ApiResult};
use crate::http::middleware::extract::ApiJson;
use crate::http::AppState;
use crate::sandbox::script::{Failure, FailureKind, Script};
use crate::sandbox::{Cause, Stopped};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use trellis_model::api::{Problem, ScriptPreview, ScriptPreviewRequest, ScriptProblem};
use trellis_model::config::{check_config_with, NodeKind, ScriptConfig};
use trellis_model::Issue;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(preview))
}

#[utoipa::path(
    post,
    path = "/scripts/preview",
    operation_id = "previewScript",
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
        (status = 503, description = "Every sandbox worker stayed busy; try again", body = Problem),
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
        item: Value::Null,
        index: Value::Null,
        now: chrono::Utc::now(),
        limits,
    };
    let deadline = script::deadline(&limits);
    // Waits in line at most the request's bound (`middleware::sandbox_wait`), then runs
    // within `deadline`.
    let ran = match state.engine.sandbox().run_script(sample, deadline).await {
        Ok(ran) => ran,
        Err(stopped) if stopped.cause == Cause::Busy => return Err(stopped.into()),
        Err(stopped) => return Ok(refusal(&stopped_failure(stopped), Vec::new())),
    };
    let output = ran.output.and_then(|output| {
        // The cap an attempt's output is held to, so a preview that passes stores too.
        match state.engine.output_caps().check("preview", &output, 0, 0) {
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
    // A script's config holds no expression, so nothing is compiled here.
    let problems = check_config_with(NodeKind::Script, &value, &mut |_| Ok(()));
    if problems.is_empty() {
        return Ok(());
    }
    let issues = problems
        .into_iter()
        .map(|p| Issue::new("invalid_config", p.message).path(p.path.trim_start_matches("config.").to_owned()))
        .collect();
    Err(ApiError::invalid("the script cannot be run as given; see `errors`", issues))
}

/// A worker that ended under the script (a limit it met in the sandbox, a crash), as a failure.
fn stopped_failure(stopped: Stopped) -> Failure {
    let kind = match stopped.cause {
        Cause::Memory => FailureKind::Memory,
        Cause::Time | Cause::Cpu => FailureKind::Time,
        Cause::Stack => FailureKind::Stack,
        _ => FailureKind::Engine,
    };
    Failure { kind, message: stopped.message, at: None }
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
