//! Trigger bodies are read field by field (the settings depend on `kind`), so their schemas are
//! written here, from `triggers::spec` and the constants its checks use.

use super::constraints::NOT_BLANK;
use crate::http::resources::trigger_management::MAX_NAME_LEN;
use crate::triggers::schedule::MAX_PREVIEW;
use crate::triggers::spec::{MAX_MAPPING_LEN, MAX_RATE_PER_MINUTE};
use serde_json::{json, Map, Value};

/// Sets the request schema of the trigger operations.
pub fn bodies(doc: &mut Value) {
    let bodies = [
        ("/api/v1/workflows/{id}/triggers", "post", kinds(&shared())),
        ("/api/v1/triggers/preview", "post", preview()),
        ("/api/v1/triggers/{id}", "patch", change()),
    ];
    for (path, method, schema) in bodies {
        doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"] = schema;
    }
}

/// What every kind takes besides its settings.
fn shared() -> Map<String, Value> {
    // The server counts bytes; this many characters always fit.
    let name = json!({"type": ["string", "null"], "minLength": 1, "maxLength": MAX_NAME_LEN / 4,
                      "pattern": NOT_BLANK});
    let mut fields = Map::new();
    fields.insert("name".into(), name);
    fields.insert("paused".into(), json!({"type": "boolean"}));
    fields
}

fn webhook() -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("preset".into(), json!({"type": "string", "enum": ["standard", "github"]}));
    fields.insert(
        "input_mapping".into(),
        json!({"type": ["string", "null"], "minLength": 1, "maxLength": MAX_MAPPING_LEN / 4, "pattern": NOT_BLANK,
               "description": "An expression over `{body, headers}` whose value becomes the input."}),
    );
    fields.insert(
        "rate_limit_per_minute".into(),
        json!({"type": ["integer", "null"], "minimum": 1, "maximum": MAX_RATE_PER_MINUTE}),
    );
    fields
}

fn cron() -> Map<String, Value> {
    let mut fields = Map::new();
    let expression = "5 fields (minute first) or 6 (second first)";
    fields.insert("expression".into(), json!({"type": "string", "pattern": NOT_BLANK, "description": expression}));
    let zones: Vec<&str> = chrono_tz::TZ_VARIANTS.iter().map(|zone| zone.name()).collect();
    fields.insert(
        "timezone".into(),
        json!({"type": "string", "enum": zones, "description": "An IANA zone (default `UTC`)."}),
    );
    fields.insert("overlap".into(), json!({"type": "string", "enum": ["skip", "queue_one", "allow"]}));
    fields.insert("catch_up".into(), json!({"type": "string", "enum": ["none", "last", "all"]}));
    fields
}

/// One object per kind: its `kind`, the `extra` fields and its own settings, nothing else.
fn kinds(extra: &Map<String, Value>) -> Value {
    let one = |kind: &str, settings: Map<String, Value>, required: &[&str]| {
        let mut properties = extra.clone();
        properties.insert("kind".into(), json!({"type": "string", "const": kind}));
        properties.extend(settings);
        let mut required = required.to_vec();
        required.push("kind");
        json!({"type": "object", "title": kind, "required": required, "properties": properties,
               "additionalProperties": false})
    };
    json!({"oneOf": [one("webhook", webhook(), &[]), one("cron", cron(), &["expression"])],
           "description": "`kind` and that kind's settings"})
}

/// A schedule to try: a cron's settings (without `kind`) and how many fire times to show.
fn preview() -> Value {
    let mut properties = cron();
    properties.insert("count".into(), json!({"type": ["integer", "null"], "minimum": 1, "maximum": MAX_PREVIEW}));
    json!({"type": "object", "required": ["expression"], "properties": properties, "additionalProperties": false})
}

/// A change: the shared fields and any kind's settings (those of another kind are refused).
fn change() -> Value {
    let mut properties = shared();
    properties.insert("kind".into(), json!({"$ref": "#/components/schemas/TriggerKind"}));
    properties.extend(webhook());
    properties.extend(cron());
    json!({"type": "object", "properties": properties, "additionalProperties": false,
           "description": "Only the fields sent change; `kind` cannot."})
}
