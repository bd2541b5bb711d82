//! What the server enforces, stated in the document: formats, enums, lengths, patterns and
//! ranges that the handlers and the model's validation check, so that a request the document
//! calls valid is one the server accepts. Each value comes from the constant the check uses.
//!
//! utoipa's attributes take only literals, and several checks live in the handlers rather than
//! on the model's types, so the constraints are added here, by schema and property (bodies) or
//! by operation and parameter (queries and headers).

use crate::auth::password::{MAX_PASSWORD_LEN, MIN_PASSWORD_LEN};
use crate::auth::MAX_USERNAME_LEN;
use crate::http::resources::{
    api_keys, audit_log, bulk_jobs, event_streams, failures, instances, trigger_management, views, workflows,
};
use crate::jobs::retention::MAX_DAYS;
use crate::triggers::schedule::MAX_PREVIEW;
use serde_json::{json, Value};
use trellis_model::config::{NodeKind, SCRIPT_MEMORY_MB, SCRIPT_TIMEOUT_MS};
use trellis_model::validate::{MAX_ATTEMPTS, MAX_DURATION_MS, MAX_NAME_LEN, MAX_NODE_ID_LEN};
use trellis_model::InstanceStatus;

/// No control characters (what `char::is_control` refuses), and not only white space (names
/// are trimmed before they are checked).
const PRINTABLE_NAME: &str =
    "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\s\\u0000-\\u001F\\u007F-\\u009F][^\\u0000-\\u001F\\u007F-\\u009F]*$";
/// Every JSON body is refused with a NUL in any string (`middleware::strict`).
const NO_NUL: &str = "^[^\\u0000]*$";
/// Text that must not be blank (it is trimmed first), without NUL.
pub const NOT_BLANK: &str = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$";

pub fn apply(doc: &mut Value) {
    let schemas = &mut doc["components"]["schemas"];
    accounts(schemas);
    workflows(schemas);
    definitions(schemas);
    operations(schemas);
    // Last: only where no pattern, enum or format above says more.
    no_nul_in_strings(schemas);
    workflow_retention(doc);
    queries(doc);
}

fn statuses() -> Value {
    json!(InstanceStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>())
}

/// Merges `extra` into the schema of `schema.property` (utoipa's type and description stay).
fn constrain(schemas: &mut Value, schema: &str, property: &str, extra: Value) {
    let target = &mut schemas[schema]["properties"][property];
    assert!(target.is_object(), "the document has no {schema}.{property}");
    for (key, value) in extra.as_object().expect("constraints are objects") {
        target[key] = value.clone();
    }
}

fn name(max: usize) -> Value {
    json!({"minLength": 1, "maxLength": max, "pattern": PRINTABLE_NAME})
}

fn accounts(s: &mut Value) {
    let username = json!({"minLength": 1, "maxLength": MAX_USERNAME_LEN, "pattern": "^[A-Za-z0-9_.@-]+$",
        "description": "Letters, digits, `_`, `-`, `.` or `@` (the server also takes non-ASCII letters and \
                        digits, up to the same number of bytes)."});
    let password = json!({"minLength": MIN_PASSWORD_LEN, "maxLength": MAX_PASSWORD_LEN});
    constrain(s, "CreateUser", "username", username);
    constrain(s, "CreateUser", "password", password.clone());
    constrain(s, "UpdateUser", "password", password);
    // Roles are the model's `Role` enum, named by the schemas themselves.
    // A change must change something.
    s["UpdateUser"]["anyOf"] = json!(["role", "password", "disabled"]
        .map(|field| json!({"required": [field], "properties": {field: {"not": {"type": "null"}}}})));
    constrain(s, "CreateApiKey", "name", name(api_keys::MAX_KEY_NAME_LEN));
    secrets(s);
    saved_views(s);
}

/// Secret names by the model's pattern; values not empty (at most 64 KiB of UTF-8, which
/// `maxLength`, counting characters, cannot say: the description does).
fn secrets(s: &mut Value) {
    let name =
        json!({"pattern": trellis_model::secret::NAME_PATTERN, "maxLength": trellis_model::secret::MAX_NAME_LEN});
    constrain(s, "CreateSecret", "name", name);
    let value = json!({"minLength": 1, "pattern": NO_NUL,
        "description": format!("At most {} bytes of UTF-8; never shown again.", crate::secrets::MAX_VALUE_BYTES)});
    constrain(s, "CreateSecret", "value", value.clone());
    constrain(s, "UpdateSecret", "value", value);
    let description = json!({"maxLength": crate::secrets::MAX_DESCRIPTION_CHARS});
    constrain(s, "CreateSecret", "description", description.clone());
    constrain(s, "UpdateSecret", "description", description);
}

/// A view opens the instances list only (`views::checked_path`).
fn saved_views(s: &mut Value) {
    constrain(s, "CreateView", "name", name(views::MAX_VIEW_NAME_LEN));
    let page = views::VIEW_PAGE;
    let path = json!({"maxLength": views::MAX_VIEW_PATH_LEN, "pattern": format!(r"^{page}(\?[^\s\\\u0000-\u001F\u007F-\u009F]*)?$"),
        "description": "The instances list, alone or with its query; nothing else."});
    constrain(s, "CreateView", "path", path);
}

fn workflows(s: &mut Value) {
    let description = json!({"maxLength": workflows::MAX_DESCRIPTION_LEN});
    for schema in ["CreateWorkflow", "UpdateWorkflow"] {
        constrain(s, schema, "name", name(workflows::MAX_NAME_LEN));
        constrain(s, schema, "description", description.clone());
    }
}

fn definitions(s: &mut Value) {
    let kinds: Vec<&str> = NodeKind::ALL.iter().map(|k| k.as_str()).collect();
    let duration = json!({"minimum": 1, "maximum": MAX_DURATION_MS});
    constrain(s, "Node", "type", json!({"enum": kinds}));
    constrain(s, "Node", "id", json!({"pattern": format!("^[A-Za-z0-9_-]{{1,{MAX_NODE_ID_LEN}}}$")}));
    constrain(s, "Node", "name", json!({"maxLength": MAX_NAME_LEN}));
    constrain(s, "Node", "timeout_ms", duration.clone());
    constrain(s, "Node", "stuck_after_ms", duration.clone());
    constrain(s, "RetryPolicy", "max_attempts", json!({"minimum": 1, "maximum": MAX_ATTEMPTS}));
    constrain(s, "RetryPolicy", "max_backoff_ms", json!({"maximum": MAX_DURATION_MS}));
    for field in ["max_concurrent_instances", "max_parallel_nodes", "max_per_key"] {
        constrain(s, "Settings", field, json!({"minimum": 1}));
    }
    constrain(s, "Settings", "timeout_ms", duration);
    // `max_per_key` means nothing without a key to count by.
    s["Settings"]["dependentSchemas"] = json!({"max_per_key": {"required": ["concurrency_key"], "properties": {"concurrency_key": {"type": "string"}}}});
    // The server counts 1,000 bytes; 250 characters always fit.
    constrain(s, "Settings", "concurrency_key", json!({"maxLength": 250, "pattern": NOT_BLANK}));
}

fn operations(s: &mut Value) {
    for field in ["succeeded_days", "failed_days", "canceled_days", "timed_out_days", "audit_days"] {
        constrain(s, "RetentionPolicy", field, json!({"minimum": 1, "maximum": MAX_DAYS}));
    }
    let (min_mb, _, max_mb) = SCRIPT_MEMORY_MB;
    let (min_ms, _, max_ms) = SCRIPT_TIMEOUT_MS;
    constrain(s, "ScriptPreviewRequest", "memory_mb", json!({"minimum": min_mb, "maximum": max_mb}));
    constrain(s, "ScriptPreviewRequest", "timeout_ms", json!({"minimum": min_ms, "maximum": max_ms}));
    constrain(s, "ScriptPreviewRequest", "source", json!({"pattern": NOT_BLANK}));
    constrain(s, "RotateSecret", "grace_ms", json!({"maximum": trigger_management::MAX_GRACE_MS}));
    constrain(s, "StartInstance", "version", json!({"minimum": 1}));
    constrain(s, "InstanceFilter", "workflow", json!({"format": "uuid"}));
    constrain(s, "InstanceFilter", "ids", json!({"items": {"type": "string", "format": "uuid"}, "maxItems": 1_000}));
    constrain(s, "InstanceFilter", "status", json!({"items": {"type": "string", "enum": statuses()}}));
    // A filter that names nothing matches everything, which only `"all": true` may mean.
    let named = ["workflow", "version", "since", "until", "key", "node", "error_class"]
        .map(|key| json!({"required": [key], "properties": {key: {"not": {"type": "null"}}}}));
    let listed = ["status", "ids"].map(|key| json!({"required": [key], "properties": {key: {"minItems": 1}}}));
    let any: Vec<Value> = named.into_iter().chain(listed).collect();
    let some_filter = json!({"required": ["filter"], "properties": {"filter": {"anyOf": any}}});
    s["BulkRequest"]["anyOf"] = json!([{"required": ["all"], "properties": {"all": {"const": true}}}, some_filter]);
}

/// A workflow's own policy has no `audit_days`: the audit log is kept by the default one.
fn workflow_retention(doc: &mut Value) {
    let own = json!({"allOf": [{"$ref": "#/components/schemas/RetentionPolicy"},
                               {"type": "object", "properties": {"audit_days": {"type": "null"}}}]});
    for (path, method) in
        [("/api/v1/workflows/{id}/retention", "put"), ("/api/v1/workflows/{id}/retention/preview", "post")]
    {
        doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"] = own.clone();
    }
}

/// Query and header parameters, by operation id; no NUL in any text (`middleware::edge`).
fn queries(doc: &mut Value) {
    let limit = |max: i64| json!({"minimum": 1, "maximum": max});
    let uuid = json!({"format": "uuid"});
    let secret_name = json!({"pattern": trellis_model::secret::NAME_PATTERN});
    let parameters = [
        ("listWorkflows", "limit", limit(workflows::MAX_PAGE)),
        ("listWorkflows", "cursor", uuid.clone()),
        ("listInstances", "limit", limit(instances::MAX_PAGE)),
        ("listInstances", "status", json!({"items": {"type": "string", "enum": statuses()}})),
        ("listAuditEntries", "limit", limit(audit_log::MAX_PAGE)),
        ("listAuditEntries", "cursor", uuid),
        ("listJobs", "limit", limit(bulk_jobs::MAX_PAGE)),
        ("listTriggerDeliveries", "limit", limit(trigger_management::deliveries::MAX_PAGE)),
        ("listFailureGroups", "limit", limit(failures::MAX_GROUPS)),
        ("showInstanceHistory", "limit", limit(event_streams::MAX_HISTORY_PAGE)),
        ("previewTrigger", "count", json!({"minimum": 1, "maximum": MAX_PREVIEW})),
        ("showInstanceStats", "bucket", json!({"enum": ["minute", "hour", "day"]})),
        ("updateSecret", "name", secret_name.clone()),
        ("deleteSecret", "name", secret_name),
        ("startInstance", "Idempotency-Key", json!({"minLength": 1, "maxLength": instances::MAX_IDEMPOTENCY_KEY_LEN})),
    ];
    no_nul_in_queries(doc);
    for (operation, parameter, extra) in parameters {
        let schema = parameter_schema(doc, operation, parameter);
        for (key, value) in extra.as_object().expect("constraints are objects") {
            schema[key] = value.clone();
        }
    }
}

fn parameter_schema<'a>(doc: &'a mut Value, operation: &str, parameter: &str) -> &'a mut Value {
    let paths = doc["paths"].as_object_mut().expect("paths");
    let found = paths
        .values_mut()
        .flat_map(|item| item.as_object_mut().into_iter().flat_map(|methods| methods.values_mut()))
        .find(|op| op["operationId"] == operation)
        .unwrap_or_else(|| panic!("the document has no operation {operation}"));
    let parameters = found["parameters"].as_array_mut().expect("parameters");
    let found = parameters.iter_mut().find(|p| p["name"] == parameter);
    &mut found.unwrap_or_else(|| panic!("{operation} has no parameter {parameter}"))["schema"]
}

/// Every string property of every schema that says nothing else about its text.
fn no_nul_in_strings(schemas: &mut Value) {
    for schema in schemas.as_object_mut().into_iter().flat_map(|s| s.values_mut()) {
        let properties = schema.get_mut("properties").and_then(Value::as_object_mut);
        for property in properties.into_iter().flat_map(|p| p.values_mut()) {
            let is_text = property["type"] == "string"
                || property["type"].as_array().is_some_and(|t| t.len() == 2 && t.contains(&json!("string")));
            let said = ["format", "pattern", "enum"].iter().any(|k| property.get(k).is_some());
            if is_text && !said {
                property["pattern"] = json!(NO_NUL);
            }
        }
    }
}

fn no_nul_in_queries(doc: &mut Value) {
    let paths = doc["paths"].as_object_mut().expect("paths");
    let operations = paths.values_mut().flat_map(|item| item.as_object_mut().into_iter().flat_map(|m| m.values_mut()));
    for operation in operations {
        let parameters = operation.get_mut("parameters").and_then(Value::as_array_mut);
        for parameter in parameters.into_iter().flatten().filter(|p| p["in"] == "query") {
            let schema = &mut parameter["schema"];
            let text = if schema["type"] == "array" { &mut schema["items"] } else { schema };
            let said = ["format", "pattern", "enum"].iter().any(|k| text.get(k).is_some());
            if text["type"] == "string" && !said {
                text["pattern"] = json!(NO_NUL);
            }
        }
    }
}
