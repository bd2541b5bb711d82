//! The master key: a real `trellis serve` keeps its secrets usable across a restart and a
//! `trellis secrets rotate-master-key`; a key of the wrong length or another key than the
//! database's stops the start, saying so.

use crate::common::{both_backends, db_config, fresh_database, serve_config, Backend, TestApp, TEST_MASTER_KEY};
use crate::ledger::{self, Ledger};
use crate::process::{admin_token, Process};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};
use std::sync::Arc;
use trellis::config::DatabaseConfig;

const TOKEN: &str = "rotated-through-restarts";
const REFUSED: &str = "is not the one this database's secrets are sealed with";

/// A signed-in client of one server process.
struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Client {
    async fn of(server: &Process) -> Client {
        let http = trellis::http_client::builder().build().unwrap();
        let token = admin_token(&http, &server.base).await;
        Client { http, base: server.base.clone(), token }
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let sent = self.http.post(format!("{}{path}", self.base)).bearer_auth(&self.token).json(&body);
        let answer = sent.send().await.unwrap();
        (answer.status().as_u16(), answer.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        let answer = self.http.get(format!("{}{path}", self.base)).bearer_auth(&self.token).send().await.unwrap();
        answer.json().await.unwrap()
    }
}

/// Creates the secret and a published workflow whose `http` node sends it to `addr`.
async fn seed(server: &Process, addr: std::net::SocketAddr) {
    let client = Client::of(server).await;
    assert_eq!(client.post("/api/v1/secrets", json!({"name": "TOKEN", "value": TOKEN})).await.0, 201);
    let definition = json!({"nodes": [{"id": "call", "type": "http", "config": {
        "url": format!("http://{addr}/x"), "headers": {"Authorization": "{{ secret.TOKEN }}"}}}]});
    let (status, workflow) = client.post("/api/v1/workflows", json!({"name": "w", "definition": definition})).await;
    assert_eq!(status, 201);
    let publish = format!("/api/v1/workflows/{}/versions", workflow["id"].as_str().unwrap());
    assert_eq!(client.post(&publish, json!({})).await.0, 201);
}

/// Runs the workflow once on `server`, then kills it; what the call's `Authorization` was.
async fn run_once(server: Process, ledger: &Arc<Ledger>) -> Option<String> {
    let client = Client::of(&server).await;
    let workflows = client.get("/api/v1/workflows").await;
    let start = format!("/api/v1/workflows/{}/instances", workflows["items"][0]["id"].as_str().unwrap());
    let (status, started) = client.post(&start, json!({"input": {}})).await;
    assert_eq!(status, 201, "{started}");
    let instance = format!("/api/v1/instances/{}", started["id"].as_str().unwrap());
    for _ in 0..200 {
        let detail = client.get(&instance).await;
        if detail["status"] == "succeeded" {
            server.kill_hard().await;
            return ledger.calls.lock().unwrap().last().and_then(|call| call.authorization.clone());
        }
        assert_ne!(detail["status"], "failed", "{detail}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the run did not end");
}

/// `trellis secrets rotate-master-key` on `url`: SQLite's key file is replaced; Postgres's
/// key comes from the environment, so the new one is given there too.
fn rotate(url: &str, new_key: &str) -> String {
    let mut rotate = std::process::Command::new(env!("CARGO_BIN_EXE_trellis"));
    rotate.args(["secrets", "rotate-master-key"]).env("DATABASE_URL", url);
    if url.starts_with("postgres") {
        rotate.env("TRELLIS_MASTER_KEY", TEST_MASTER_KEY).env("TRELLIS_NEW_MASTER_KEY", new_key);
    }
    let rotated = rotate.output().unwrap();
    let said = String::from_utf8_lossy(&rotated.stdout).into_owned() + &String::from_utf8_lossy(&rotated.stderr);
    assert!(rotated.status.success(), "{said}");
    said
}

async fn restarts_and_master_key_rotation_keep_secrets_usable(backend: Backend) {
    let (url, _dir) = fresh_database(backend).await;
    let (addr, ledger) = ledger::start().await;
    let first = Process::start(&url, &[]).await;
    seed(&first, addr).await;
    assert_eq!(run_once(first, &ledger).await.as_deref(), Some(TOKEN));
    assert_eq!(run_once(Process::start(&url, &[]).await, &ledger).await.as_deref(), Some(TOKEN), "after a restart");

    let new_key = "b".repeat(64);
    assert!(rotate(&url, &new_key).contains("re-wrapped 1 secret(s)"));
    let sqlite = url.starts_with("sqlite");
    let env: Vec<(&str, &str)> = if sqlite { vec![] } else { vec![("TRELLIS_MASTER_KEY", new_key.as_str())] };
    assert_eq!(run_once(Process::start(&url, &env).await, &ledger).await.as_deref(), Some(TOKEN), "after rotating");

    let old_key = if sqlite {
        let old_file = std::path::Path::new(url.trim_start_matches("sqlite://")).with_file_name("master.key.old");
        assert!(old_file.exists(), "the old key is kept beside the new one");
        DatabaseConfig { master_key_file: Some(old_file), ..db_config(&url) }
    } else {
        db_config(&url)
    };
    let refused = trellis::server::Server::build(old_key, serve_config()).await.err().expect("the old key is refused");
    assert!(format!("{refused:#}").contains(REFUSED), "{refused:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_and_master_key_rotation_keep_secrets_usable_on_sqlite() {
    restarts_and_master_key_rotation_keep_secrets_usable(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_and_master_key_rotation_keep_secrets_usable_on_postgres() {
    restarts_and_master_key_rotation_keep_secrets_usable(Backend::Postgres).await
}

async fn a_wrong_master_key_is_refused_at_start_saying_so(app: TestApp) {
    let start = |key: &str| {
        let db = DatabaseConfig { master_key: Some(key.into()), ..db_config(&app.database_url) };
        trellis::server::Server::build(db, serve_config())
    };
    let short = start(&STANDARD.encode([1u8; 16])).await.err().expect("a 16-byte key is refused");
    let said = format!("{short:#}");
    assert!(said.contains("TRELLIS_MASTER_KEY is 16 bytes long; the master key must be exactly 32 bytes"), "{said}");
    let wrong = start(&"c".repeat(64)).await.err().expect("another key is refused");
    assert!(format!("{wrong:#}").contains(REFUSED), "{wrong:#}");
}

both_backends!(a_wrong_master_key_is_refused_at_start_saying_so);
