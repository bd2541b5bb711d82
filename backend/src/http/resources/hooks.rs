//! `POST /hooks/{trigger_id}`: webhook deliveries. Outside `/api/v1` and without a session:
//! the signature is the authentication (see `triggers::signature`). The body is read raw,
//! up to `TRELLIS_WEBHOOK_MAX_BODY_BYTES`, because the signature covers its exact bytes.

use crate::http::middleware::error::{problem, problem_response};
use crate::http::middleware::extract::ApiPath;
use crate::http::AppState;
use crate::triggers::deliver::{self, Answer, Delivery};
use crate::triggers::TriggerSpec;
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use chrono::Utc;
use trellis_model::api::{HookAnswer, Problem};
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt};
use utoipa_axum::routes;
use uuid::Uuid;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(receive).map(|method_router| method_router.fallback(post_only)))
}

#[utoipa::path(
    post,
    path = "/hooks/{trigger_id}",
    operation_id = "receiveWebhook",
    tag = "triggers",
    request_body(content = serde_json::Value, description = "Any body; the signature covers its exact bytes"),
    params(
        ("webhook-id" = String, Header, description = "Standard Webhooks message id (dedupe key)"),
        ("webhook-timestamp" = String, Header, description = "Unix seconds; within 5 minutes of the server's clock"),
        ("webhook-signature" = String, Header, description = "`v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>`"),
    ),
    responses(
        (status = 202, description = "An instance was started", body = HookAnswer),
        (
            status = 200,
            description = "A repeated `webhook-id` (GitHub preset: a repeated delivery id or body): \
                           `duplicate` is true",
            body = HookAnswer
        ),
        (
            status = 401,
            description = "Bad or missing signature, a stale timestamp, or (GitHub preset) no `X-GitHub-Delivery`; \
                           checked before any other answer",
            body = Problem
        ),
        (
            status = 409,
            description = "Correctly signed, but the trigger is paused or the workflow has no published version",
            body = Problem
        ),
        (
            status = 422,
            description = "The (mapped) body violates the workflow's `input_schema`: `errors` lists each violation \
                           by JSON path (`path`, `message`); nothing is started. Also: the input mapping failed",
            body = Problem
        ),
    )
)]
async fn receive(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let received_at = Utc::now();
    let Some(trigger) = (match Uuid::parse_str(&id) {
        Ok(id) => match state.store.get_trigger(id).await {
            Ok(found) => found,
            Err(e) => return crate::http::middleware::error::ApiError::from(e).into_response(),
        },
        Err(_) => None,
    }) else {
        return answer(Answer::refused(
            StatusCode::NOT_FOUND,
            "no webhook trigger at this URL; check the trigger's `url`",
        ));
    };
    let Ok(TriggerSpec::Webhook(spec)) = TriggerSpec::from_stored(&trigger.spec.0) else {
        return answer(Answer::refused(
            StatusCode::NOT_FOUND,
            "no webhook trigger at this URL; check the trigger's `url`",
        ));
    };
    let limit = state.serve.webhook_max_body_bytes;
    // A declared length over the limit is refused before reading anything.
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    let read = match declared {
        Some(length) if length > limit => Err(()),
        _ => axum::body::to_bytes(body, limit).await.map_err(|_| ()),
    };
    let body = match read {
        Ok(body) => body,
        Err(_) => {
            // Too large, or the sender stopped mid-body: either way nothing to verify.
            let refused =
                Answer::refused(StatusCode::PAYLOAD_TOO_LARGE, format!("webhook bodies are limited to {limit} bytes"));
            deliver::record(&*state.store, trigger.id, received_at, None, &refused).await;
            return answer(refused);
        }
    };
    let delivery = Delivery { trigger: &trigger, spec: &spec, headers: &headers, body: &body, received_at };
    answer(deliver::deliver(&*state.store, &state.engine, &delivery).await)
}

async fn post_only() -> Response {
    let mut refused = answer(Answer::refused(StatusCode::METHOD_NOT_ALLOWED, "webhook deliveries are POST requests"));
    refused.headers_mut().insert(axum::http::header::ALLOW, axum::http::HeaderValue::from_static("POST"));
    refused
}

fn answer(answer: Answer) -> Response {
    match answer {
        Answer::Started(id) => {
            (StatusCode::ACCEPTED, Json(HookAnswer { instance_id: id.to_string(), duplicate: false })).into_response()
        }
        Answer::Duplicate(id) => {
            (StatusCode::OK, Json(HookAnswer { instance_id: id.to_string(), duplicate: true })).into_response()
        }
        Answer::Refused { status, reason, retry_after, errors } => {
            let mut response = problem_response(&problem(status, reason, errors));
            if let Some(seconds) = retry_after {
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            response
        }
    }
}
