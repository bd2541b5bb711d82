//! The OpenAPI document, checked by rules that are not ours: the OpenAPI 3.1 schema
//! (`openapi-3.1-schema.json`, the OpenAPI Initiative's `https://spec.openapis.org/oas/3.1/schema/2022-10-07`,
//! stored so the test never fetches), JSON Schema 2020-12 for every schema in it, and what
//! the specification says in prose: operation ids are unique.

use serde_json::Value;
use std::collections::BTreeMap;

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];
/// `<verb><Resource>`: a lowercase verb, then the resource in PascalCase (see ARCHITECTURE.md).
const OPERATION_ID: &str = "^[a-z]+[A-Z][A-Za-z0-9]*$";

fn document() -> Value {
    trellis::http::openapi::build()
}

/// Every operation of the document as (`METHOD path`, operation).
pub fn operations(doc: &Value) -> Vec<(String, &Value)> {
    let mut found = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS {
            if let Some(operation) = item.get(method) {
                found.push((format!("{} {path}", method.to_uppercase()), operation));
            }
        }
    }
    found
}

#[test]
fn the_document_is_valid_against_the_openapi_3_1_schema() {
    let meta: Value = serde_json::from_str(include_str!("openapi-3.1-schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&meta).expect("the OpenAPI 3.1 schema compiles");
    let doc = document();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "the document breaks the OpenAPI 3.1 schema:\n{}", errors.join("\n"));
}

#[test]
fn every_operation_has_a_unique_operation_id_named_verb_then_resource() {
    let doc = document();
    let rule = jsonschema::draft202012::new(&serde_json::json!({"type": "string", "pattern": OPERATION_ID})).unwrap();
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (what, operation) in operations(&doc) {
        let id = operation["operationId"].as_str().unwrap_or_else(|| panic!("{what} has no operationId"));
        assert!(rule.is_valid(&Value::from(id)), "{what}: operationId `{id}` is not <verb><Resource> ({OPERATION_ID})");
        seen.entry(id.to_owned()).or_default().push(what);
    }
    let repeated: Vec<_> = seen.iter().filter(|(_, ops)| ops.len() > 1).collect();
    assert!(repeated.is_empty(), "operationIds used more than once: {repeated:?}");
}

/// Each schema in the document is a JSON Schema 2020-12 schema, and each compiles with every
/// `$ref` resolved against the document (patterns included).
#[test]
fn every_schema_is_valid_json_schema_2020_12_and_resolves() {
    let doc = document();
    let mut schemas: Vec<(String, Value)> = doc["components"]["schemas"]
        .as_object()
        .expect("schemas")
        .iter()
        .map(|(name, schema)| (format!("#/components/schemas/{name}"), schema.clone()))
        .collect();
    for (what, operation) in operations(&doc) {
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            schemas.push((format!("{what} parameter {}", parameter["name"]), parameter["schema"].clone()));
        }
        for (media, body) in operation["requestBody"]["content"].as_object().into_iter().flatten() {
            schemas.push((format!("{what} request {media}"), body["schema"].clone()));
        }
        for (status, response) in operation["responses"].as_object().into_iter().flatten() {
            for (media, body) in response["content"].as_object().into_iter().flatten() {
                if body.get("schema").is_some() {
                    schemas.push((format!("{what} {status} {media}"), body["schema"].clone()));
                }
            }
        }
    }
    let mut broken = Vec::new();
    for (what, schema) in schemas {
        if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
            broken.push(format!("{what}: {e}"));
        } else if let Err(e) = jsonschema::draft202012::new(&within(&doc, &schema)) {
            broken.push(format!("{what} does not compile: {e}"));
        }
    }
    assert!(broken.is_empty(), "schemas that are not valid JSON Schema 2020-12:\n{}", broken.join("\n"));
}

/// `schema` as the root of a document that also holds the OpenAPI document's components, so
/// its `#/components/...` references resolve.
pub fn within(doc: &Value, schema: &Value) -> Value {
    let mut root = match schema {
        Value::Object(map) => Value::Object(map.clone()),
        other => serde_json::json!({"allOf": [other]}),
    };
    root["$schema"] = "https://json-schema.org/draft/2020-12/schema".into();
    root["components"] = doc["components"].clone();
    root
}

/// The checks above and in `openapi_answers` would pass vacuously if schemas compiled to
/// nothing: a body that breaks the document's `Me` (an unknown role), and a path id that is not
/// a UUID, are refused.
#[test]
fn the_schemas_refuse_what_the_server_refuses() {
    let doc = document();
    let me = within(&doc, &serde_json::json!({"$ref": "#/components/schemas/Me"}));
    let me = jsonschema::options().should_validate_formats(true).build(&me).unwrap();
    assert!(me.is_valid(&serde_json::json!({"id": "1", "username": "ann", "role": "admin"})));
    assert!(!me.is_valid(&serde_json::json!({"id": "1", "username": "ann", "role": "root"})));
    let show = &doc["paths"]["/api/v1/workflows/{id}"]["get"]["parameters"][0]["schema"];
    let id = jsonschema::options().should_validate_formats(true).build(show).unwrap();
    assert!(id.is_valid(&Value::from("01a213a8-f9c5-768f-b0dc-aa27348db640")));
    assert!(!id.is_valid(&Value::from("not-a-uuid")));
}
