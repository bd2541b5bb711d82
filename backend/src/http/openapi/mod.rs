//! `GET /api/v1/openapi.json`: the OpenAPI 3.1 document, generated from the same
//! registrations that serve the routes.
//!
//! Every route is registered with utoipa-axum's `routes!(handler)`, which reads the
//! handler's `#[utoipa::path(...)]` and both adds the route to the axum router and its
//! operation to the document, so a served route cannot lack documentation. What every
//! operation shares is added here once instead of on each handler: the path parameters
//! named in the template, the security requirement, and the problem+json error answers.
//! Handlers document their own error answers as `body = Problem`; this gives every such
//! answer the media type problems are sent with, `application/problem+json`.
//!
//! The document is public: it describes the API's shape, not any data, and client
//! generators and the SPA need it before anyone signs in.

mod constraints;
mod triggers;

use super::AppState;
use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{json, Map, Value};
use std::sync::OnceLock;
use trellis_model::api::Problem;
use utoipa::openapi::OpenApi;
use utoipa::{PartialSchema, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(document))
}

/// This document (OpenAPI 3.1).
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "showOpenApiDocument",
    tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", body = Value))
)]
async fn document() -> impl IntoResponse {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    let text = DOCUMENT.get_or_init(|| serde_json::to_string(&build()).expect("the document serializes"));
    ([(header::CONTENT_TYPE, "application/json")], text.as_str())
}

/// Routes that need no credentials (besides those outside `/api/v1`).
const PUBLIC: &[&str] = &["/api/v1/auth/login", "/api/v1/auth/logout", "/api/v1/openapi.json"];
const METHODS: &[&str] = &["get", "put", "post", "delete", "patch"];

/// The complete document: the routers' operations plus what all of them share.
pub fn build() -> Value {
    let mut doc = serde_json::to_value(super::documented_routes().into_openapi()).expect("the document serializes");
    info(&mut doc);
    components(&mut doc);
    spell_out_any(&mut doc);
    triggers::bodies(&mut doc);
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            for method in METHODS {
                if let Some(operation) = item.get_mut(*method).and_then(Value::as_object_mut) {
                    complete(path, operation);
                }
            }
        }
    }
    constraints::apply(&mut doc);
    doc
}

/// Writes "any JSON value" schemas (`{}`, or only a description, which utoipa emits for
/// `serde_json::Value`) as the explicit list of every JSON type: the same meaning in JSON
/// Schema 2020-12, but one that typed OpenAPI models (utoipa's own included) can read back.
fn spell_out_any(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                let holds_schema = matches!(key.as_str(), "schema" | "items" | "additionalProperties");
                if holds_schema && is_any(child) {
                    spell_out(child);
                } else if key == "properties" {
                    for property in child.as_object_mut().into_iter().flat_map(|p| p.values_mut()) {
                        if is_any(property) {
                            spell_out(property);
                        } else {
                            spell_out_any(property);
                        }
                    }
                } else {
                    spell_out_any(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(spell_out_any),
        _ => {}
    }
}

/// A schema that constrains nothing: no keys but annotations.
fn is_any(schema: &Value) -> bool {
    schema.as_object().is_some_and(|s| s.keys().all(|k| matches!(k.as_str(), "description" | "title")))
}

fn spell_out(schema: &mut Value) {
    schema["type"] = json!(["object", "array", "string", "number", "integer", "boolean", "null"]);
}

/// The typed form, for callers (and tests) that want it.
pub fn build_typed() -> OpenApi {
    serde_json::from_value(build()).expect("the document is a valid OpenAPI model")
}

fn info(doc: &mut Value) {
    doc["openapi"] = json!("3.1.0");
    doc["info"] = json!({
        "title": "Trellis",
        "version": env!("CARGO_PKG_VERSION"),
        "description": "Workflow designer and durable DAG engine. Errors are RFC 9457 problem+json.",
        "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
    });
}

fn components(doc: &mut Value) {
    let components = doc.as_object_mut().expect("an object").entry("components").or_insert_with(|| json!({}));
    let schemas = components.as_object_mut().expect("an object").entry("schemas").or_insert_with(|| json!({}));
    let mut problem = serde_json::to_value(Problem::schema()).expect("schemas serialize");
    // The schema of `errors` items is the model's `Issue`.
    let mut issue_schemas = Vec::new();
    Problem::schemas(&mut issue_schemas);
    for (name, schema) in issue_schemas {
        schemas[name] = serde_json::to_value(schema).expect("schemas serialize");
    }
    problem["description"] = json!("An RFC 9457 problem; validation errors list every issue in `errors`.");
    schemas["Problem"] = problem;
    // A node's `config` is free-form per type (`Node.config`); the sub-workflow node's, spelled out.
    schemas["SubworkflowConfig"] = json!({
        "type": "object",
        "description": "The config of a `subworkflow` node: runs `workflow` as a child instance; the node's output is the child's output.",
        "required": ["workflow"],
        "additionalProperties": false,
        "properties": {
            "workflow": {"type": "string", "format": "uuid", "description": "The called workflow's id."},
            "version": {"oneOf": [{"type": "string", "enum": ["latest"]}, {"type": "integer", "minimum": 1}],
                        "description": "`latest` (resolved when the node's attempt runs) or a published version number."},
            "input": {"type": "string", "description": "An expression giving the child's input; without it, the parent's input."}
        }
    });
    schemas["MapConfig"] = json!({
        "type": "object",
        "description": "The config of a `map` node: runs `node` (or starts `workflow`) once per item of `items`; outputs `{\"results\": [...in item order], \"errors\": [{\"index\", \"error\"}]}`.",
        "required": ["items"],
        "additionalProperties": false,
        "properties": {
            "items": {"type": "string", "description": "An expression giving the list; the inner node's expressions see `item` and `index`."},
            "node": {"type": "object", "required": ["type"], "additionalProperties": false,
                     "properties": {"type": {"type": "string", "description": "Any node type but `map`, `wait_signal` and `task`."},
                                    "config": {"type": "object"}}},
            "workflow": {"type": "object", "required": ["workflow"], "additionalProperties": false,
                         "properties": {"workflow": {"type": "string", "format": "uuid"},
                                        "version": {"oneOf": [{"type": "string", "enum": ["latest"]}, {"type": "integer", "minimum": 1}]}}},
            "max_parallel": {"type": "integer", "minimum": 1, "maximum": trellis_model::map::MAX_PARALLEL, "default": trellis_model::map::DEFAULT_MAX_PARALLEL},
            "on_item_failure": {"type": "string", "enum": ["fail", "continue"], "default": "fail"}
        }
    });
    components["securitySchemes"] = json!({
        "bearer": {"type": "http", "scheme": "bearer",
                   "description": "A token from `POST /api/v1/auth/login`, or an API key (`trk_...`)."},
        "cookie": {"type": "apiKey", "in": "cookie", "name": super::middleware::authed::SESSION_COOKIE,
                   "description": "The session cookie `POST /api/v1/auth/login` sets."},
    });
}

fn problem_response(description: &str) -> Value {
    json!({"description": description,
           "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}})
}

/// Adds to one operation what it shares with the others.
fn complete(path: &str, operation: &mut Map<String, Value>) {
    path_parameters(path, operation);
    let secured = path.starts_with("/api/v1/") && !PUBLIC.contains(&path);
    if secured {
        operation.insert("security".into(), json!([{"bearer": []}, {"cookie": []}]));
    }
    let responses = operation.entry("responses").or_insert_with(|| json!({}));
    let Some(responses) = responses.as_object_mut() else { return };
    responses.values_mut().for_each(problem_media_type);
    if secured {
        responses.entry("401").or_insert_with(|| problem_response("No valid credentials"));
        responses.entry("403").or_insert_with(|| problem_response("The caller's role is below this route's minimum"));
    }
    responses.entry("default").or_insert_with(|| {
        problem_response(
            "Any other error: 400 malformed input, 404 unknown resource, 409 conflict, 413 too large, \
             422 invalid, 503 database unavailable",
        )
    });
}

/// An answer whose body is a `Problem` is sent as `application/problem+json`.
fn problem_media_type(response: &mut Value) {
    let Some(content) = response.get_mut("content").and_then(Value::as_object_mut) else { return };
    let problem = json!({"$ref": "#/components/schemas/Problem"});
    if content.get("application/json").is_some_and(|json| json["schema"] == problem) {
        let body = content.remove("application/json").expect("checked above");
        content.insert("application/problem+json".into(), body);
    }
}

/// Declares each `{name}` of the path template as a required parameter, unless the handler's
/// annotation already did: `{version}` a version number, any other an id (a UUID).
fn path_parameters(path: &str, operation: &mut Map<String, Value>) {
    let parameters = operation.entry("parameters").or_insert_with(|| json!([]));
    let Some(parameters) = parameters.as_array_mut() else { return };
    for name in path.split('/').filter_map(|s| s.strip_prefix('{')?.strip_suffix('}')) {
        let declared = parameters.iter().any(|p| p["name"] == name && p["in"] == "path");
        if !declared {
            let (schema, description) = match name {
                "version" => (
                    json!({"type": "integer", "format": "int64", "minimum": 1, "maximum": i64::MAX}),
                    "A published version's number",
                ),
                "node" => (json!({"type": "string", "minLength": 1}), "A node's id"),
                _ => (json!({"type": "string", "format": "uuid"}), "The resource's id"),
            };
            parameters.push(json!({"name": name, "in": "path", "required": true, "schema": schema,
                                   "description": description}));
        }
    }
    if parameters.is_empty() {
        operation.remove("parameters");
    }
}
