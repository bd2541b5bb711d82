//! `GET /api/v1/openapi.json`: an OpenAPI 3.1 document that covers every route served.

use crate::common::{Backend, TestApp};
use serde_json::Value;
use std::collections::BTreeSet;

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// Every (method, path template) the document describes.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS {
            if item.get(method).is_some() {
                found.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    found
}

/// The template with its parameters filled in: `version` a number, anything else an id.
fn concrete(path: &str) -> String {
    let id = uuid::Uuid::now_v7().to_string();
    path.split('/')
        .map(|segment| match segment {
            "{version}" => "1".to_owned(),
            s if s.starts_with('{') => id.clone(),
            s => s.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

async fn document(app: &TestApp) -> Value {
    // Public: no credentials sent.
    let response = app.client.get(app.url("/api/v1/openapi.json")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("application/json"));
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_is_openapi_3_1_with_security_schemes_and_problem_errors() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc = document(&app).await;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"), "{}", doc["openapi"]);
    let typed: utoipa::openapi::OpenApi = serde_json::from_value(doc.clone()).expect("a valid OpenAPI 3.1 model");
    assert!(!typed.paths.paths.is_empty());

    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    assert_eq!(schemes["cookie"]["in"], "cookie");
    assert_eq!(schemes["cookie"]["name"], "trellis_session");
    assert!(doc["components"]["schemas"]["Problem"]["properties"]["detail"].is_object());
    for name in ["Definition", "Workflow", "InstanceDetail", "AuditEntry", "Issue"] {
        assert!(doc["components"]["schemas"][name].is_object(), "schema {name} is missing");
    }
    // The composition contract: concurrency keys, and the parent/child links.
    let schemas = &doc["components"]["schemas"];
    for (schema, property) in [
        ("Settings", "concurrency_key"),
        ("Settings", "max_per_key"),
        ("QueueHold", "key"),
        ("QueueHold", "key_value"),
        ("InstanceDetail", "concurrency_key"),
        ("InstanceDetail", "parent"),
        ("NodeView", "child"),
    ] {
        let has = |s: &serde_json::Value| s["properties"][property].is_object();
        let found = has(&schemas[schema]) || schemas[schema]["allOf"].as_array().is_some_and(|all| all.iter().any(has));
        assert!(found, "{schema}.{property} is missing from the OpenAPI document");
    }

    let public = ["/api/v1/auth/login", "/api/v1/auth/logout", "/api/v1/openapi.json"];
    for (method, path) in operations(&doc) {
        let operation = &doc["paths"][&path][method.to_lowercase()];
        let what = format!("{method} {path}");
        assert!(operation["responses"].as_object().is_some_and(|r| !r.is_empty()), "{what} has no responses");
        assert!(operation["tags"].as_array().is_some_and(|t| !t.is_empty()), "{what} has no tag");
        let secured = path.starts_with("/api/v1/") && !public.contains(&path.as_str());
        let requirements = operation["security"].as_array().cloned().unwrap_or_default();
        let needs_credentials = requirements.iter().any(|r| r.as_object().is_some_and(|r| !r.is_empty()));
        assert_eq!(needs_credentials, secured, "{what}: security {requirements:?}");
        if secured {
            assert_eq!(
                operation["responses"]["401"]["content"]["application/problem+json"]["schema"]["$ref"],
                "#/components/schemas/Problem",
                "{what}"
            );
        }
        let params = operation["parameters"].as_array().cloned().unwrap_or_default();
        for name in path.split('/').filter_map(|s| s.strip_prefix('{')?.strip_suffix('}')) {
            assert!(
                params.iter().any(|p| p["name"] == name && p["in"] == "path" && p["required"] == true),
                "{what}: path parameter {name}"
            );
        }
    }
    let audit = &doc["paths"]["/api/v1/audit"]["get"]["parameters"];
    for name in ["actor", "action", "target", "since", "until", "cursor", "limit"] {
        assert!(
            audit.as_array().unwrap().iter().any(|p| p["name"] == name && p["in"] == "query"),
            "audit query {name}"
        );
    }
}

/// Clients (the SPA, generated ones) read every JSON answer by its schema: each response of
/// each operation names one, except those without a body (204, redirects) and event streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_with_a_body_has_a_schema() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc = document(&app).await;
    let mut missing = Vec::new();
    for (method, path) in operations(&doc) {
        let responses = doc["paths"][&path][method.to_lowercase()]["responses"].as_object().cloned().unwrap();
        for (status, response) in responses {
            if status == "204" || status.starts_with('3') {
                continue;
            }
            let content = response["content"].as_object().cloned().unwrap_or_default();
            if content.is_empty() {
                missing.push(format!("{method} {path} {status}: no content"));
            }
            for (media_type, body) in content {
                if media_type != "text/event-stream" && !body["schema"].is_object() {
                    missing.push(format!("{method} {path} {status} {media_type}: no schema"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "responses without a schema:\n{}", missing.join("\n"));
}

/// Served ⇔ documented. Routes are registered only through utoipa-axum's `routes!`, which
/// adds the route and its operation together (`http/mod.rs`); this checks the result from
/// the outside: every documented operation is served, every other method on a documented
/// path is refused with 405, and no module registers a route around `routes!`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_route_is_documented_and_every_documented_route_is_served() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let doc = document(&app).await;
    let documented = operations(&doc);
    let paths: BTreeSet<String> = documented.iter().map(|(_, p)| p.clone()).collect();
    for path in &paths {
        let url = app.url(&concrete(path));
        for method in METHODS.map(str::to_uppercase) {
            let request = app.client.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), &url);
            // Anonymous with an empty JSON body: enough to reach each route without changing anything.
            let response = request.header("content-type", "application/json").body("{}").send().await.unwrap();
            let status = response.status().as_u16();
            let body = response.text().await.unwrap_or_default();
            if documented.contains(&(method.clone(), path.clone())) {
                assert_ne!(status, 405, "{method} {path} is documented but not served");
                assert!(!body.contains("no such API route"), "{method} {path} is documented but not served");
            } else {
                assert_eq!(status, 405, "{method} {path} is served but not documented (or answers oddly: {body})");
            }
        }
    }
    // The routes the anonymous-caller test lists are a second, hand-kept inventory.
    for path in [
        "/api/v1/auth/me",
        "/api/v1/workflows/{id}/versions/{version}",
        "/api/v1/tasks/{id}/fail",
        "/api/v1/audit",
        "/api/v1/triggers/preview",
        "/api/v1/instances/{id}/events",
        "/healthz",
        "/readyz",
        "/metrics",
        "/hooks/{trigger_id}",
    ] {
        assert!(paths.contains(path), "{path} is not documented");
    }

    let http = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    for file in rust_files(&http) {
        let text = std::fs::read_to_string(&file).unwrap();
        for forbidden in [".route(", ".route_service(", ".nest_service("] {
            assert!(
                !text.contains(forbidden),
                "{} registers a route with `{forbidden}`: use `routes!(handler)` \
                with `#[utoipa::path]` so it is documented (see ARCHITECTURE.md)",
                file.display()
            );
        }
    }
}

/// The `.rs` files under `dir`, in its subfolders too.
fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}
