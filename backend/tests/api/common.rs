//! Spawns a real Trellis server on 127.0.0.1:0 against a fresh database per test.

use reqwest::{Client, RequestBuilder, StatusCode};
use serde_json::{json, Value};
use std::net::SocketAddr;
use trellis::config::{DatabaseConfig, ServeConfig};
use trellis::server::Server;
use trellis::store::DynStore;
use trellis_model::api::{InstanceDetail, NodeView, Started, TokenResponse, Workflow};
use trellis_model::InstanceStatus;

pub const ADMIN_PASSWORD: &str = "admin-password-for-tests";
/// Known to the tests so they can mint expired or forged tokens.
pub const JWT_SECRET: &str = "a-test-signing-secret-of-at-least-32-characters";
/// The settings every test server starts from.
pub fn serve_config() -> ServeConfig {
    let mut serve = ServeConfig::local();
    serve.admin_password = Some(ADMIN_PASSWORD.into());
    serve.jwt_secret = Some(JWT_SECRET.into());
    serve.max_body_bytes = 1024 * 1024;
    // `http` nodes in tests call servers the tests start on loopback.
    serve.http_allow = "127.0.0.0/8".into();
    // Integration tests run in their own binary: the workers are the server's binary.
    serve.sandbox_worker = Some(env!("CARGO_BIN_EXE_trellis").into());
    serve.sandbox_workers = Some(2);
    serve
}

/// The master key of Postgres test databases (32 bytes, hex).
pub const TEST_MASTER_KEY: &str = "5ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2e75ec2";
pub const DEFAULT_POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";

#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub struct TestApp {
    pub addr: SocketAddr,
    pub client: Client,
    pub admin_token: String,
    pub database_url: String,
    /// The server's own store (see [`TestApp::server_store`]).
    server_store: DynStore,
    _dir: tempfile::TempDir,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> TestApp {
        Self::spawn_with(backend, |_| {}).await
    }

    /// A server whose settings `configure` adjusts first.
    pub async fn spawn_with(backend: Backend, configure: impl FnOnce(&mut ServeConfig)) -> TestApp {
        let (database_url, dir) = fresh_database(backend).await;
        Self::spawn_on(database_url, dir, configure).await
    }

    /// Another server on this app's database, as a second process sharing one Postgres would be.
    pub async fn spawn_peer(&self) -> TestApp {
        Self::spawn_on(self.database_url.clone(), tempfile::tempdir().unwrap(), |_| {}).await
    }

    /// A server on the database at `database_url`; `dir` lives as long as the app.
    pub async fn spawn_on(
        database_url: String,
        dir: tempfile::TempDir,
        configure: impl FnOnce(&mut ServeConfig),
    ) -> TestApp {
        let mut serve = serve_config();
        configure(&mut serve);
        let server = Server::build(db_config(&database_url), serve).await.expect("server starts");
        let (addr, server_store) = (server.addr, server.store());
        server.spawn();
        let client = trellis::http_client::builder().build().unwrap();
        let mut app = TestApp { addr, client, admin_token: String::new(), database_url, server_store, _dir: dir };
        app.admin_token = app.login("admin", ADMIN_PASSWORD).await;
        app
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Signs in and returns the access token.
    pub async fn login(&self, username: &str, password: &str) -> String {
        let response = self
            .client
            .post(self.url("/api/v1/auth/login"))
            .json(&json!({"username": username, "password": password}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "login as {username}");
        response.json::<TokenResponse>().await.unwrap().access_token
    }

    /// Creates a user with `role` and returns a token for them.
    pub async fn token_for(&self, role: &str) -> String {
        let username = format!("{role}-user");
        let created = self
            .as_admin(self.client.post(self.url("/api/v1/users")))
            .json(&json!({"username": username, "password": "password-123", "role": role}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), StatusCode::CREATED);
        self.login(&username, "password-123").await
    }

    pub fn as_admin(&self, request: RequestBuilder) -> RequestBuilder {
        request.bearer_auth(&self.admin_token)
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.as_admin(self.client.get(self.url(path)))
    }

    pub fn post(&self, path: &str) -> RequestBuilder {
        self.as_admin(self.client.post(self.url(path)))
    }

    pub fn put(&self, path: &str) -> RequestBuilder {
        self.as_admin(self.client.put(self.url(path)))
    }

    pub fn patch(&self, path: &str) -> RequestBuilder {
        self.as_admin(self.client.patch(self.url(path)))
    }

    /// Creates a workflow and returns its body (with `id` and `etag`).
    pub async fn create_workflow(&self, body: Value) -> Workflow {
        let response = self.post("/api/v1/workflows").json(&body).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::CREATED, "create workflow");
        response.json().await.unwrap()
    }

    /// Creates and publishes a workflow; returns its id.
    pub async fn publish(&self, definition: Value) -> String {
        let created = self.create_workflow(json!({"name": "engine test", "definition": definition})).await;
        let id = created.summary.id;
        let published = self.post(&format!("/api/v1/workflows/{id}/versions")).send().await.unwrap();
        assert_eq!(published.status(), StatusCode::CREATED);
        id
    }

    /// Publishes `definition` past the API's checks (as a version an older release published,
    /// or one written by hand into the database): for what the engine does with what
    /// publishing would refuse.
    pub async fn publish_unchecked(&self, definition: Value) -> String {
        let created = self.create_workflow(json!({"name": "unchecked", "definition": definition})).await;
        let id: uuid::Uuid = created.summary.id.parse().unwrap();
        let store = self.store().await;
        let draft_rev = store.get_workflow(id).await.unwrap().unwrap().draft_rev;
        let version = trellis::store::NewVersion {
            note: None,
            published_by: "test".into(),
            now: chrono::Utc::now(),
            stuck_after: Vec::new(),
        };
        let published = store.publish(id, draft_rev, &version).await.unwrap();
        assert!(matches!(published, trellis::store::WriteOutcome::Done(_)));
        id.to_string()
    }

    /// Starts an instance and returns its id.
    pub async fn start(&self, workflow: &str, body: Value) -> String {
        let response = self.post(&format!("/api/v1/workflows/{workflow}/instances")).json(&body).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::CREATED, "start");
        response.json::<Started>().await.unwrap().id
    }

    /// Signals `id`'s waiting node (`body`: `node` and an optional `payload`).
    pub async fn signal(&self, id: &str, body: Value) -> reqwest::Response {
        self.post(&format!("/api/v1/instances/{id}/signal")).json(&body).send().await.unwrap()
    }

    pub async fn instance(&self, id: &str) -> InstanceDetail {
        self.get(&format!("/api/v1/instances/{id}")).send().await.unwrap().json().await.unwrap()
    }

    /// The instance as the raw JSON the server sent, for checks on the wire form itself.
    pub async fn instance_json(&self, id: &str) -> Value {
        self.get(&format!("/api/v1/instances/{id}")).send().await.unwrap().json().await.unwrap()
    }

    /// Polls until the instance satisfies `done` (at most 30 s), returning it.
    pub async fn wait_for(&self, id: &str, done: impl Fn(&InstanceDetail) -> bool) -> InstanceDetail {
        for _ in 0..1_500 {
            let instance = self.instance(id).await;
            if done(&instance) {
                return instance;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("instance {id} never reached the expected state: {:?}", self.instance(id).await);
    }

    /// A workflow whose one node fails its first attempt (no retry policy), and `n` of its
    /// instances, each ended failed: a retry of any of them then succeeds.
    pub async fn failed_once_instances(&self, n: usize) -> (String, Vec<String>) {
        let wf =
            self.publish(json!({"nodes": [{"id": "flaky", "type": "fail", "config": {"fail_attempts": 1}}]})).await;
        let mut ids = Vec::new();
        for _ in 0..n {
            let id = self.start(&wf, json!({})).await;
            assert_eq!(self.wait_finished(&id).await.summary.status, InstanceStatus::Failed);
            ids.push(id);
        }
        (wf, ids)
    }

    /// Polls until the instance has ended (succeeded, failed, canceled or timed out).
    pub async fn wait_finished(&self, id: &str) -> InstanceDetail {
        self.wait_for(id, |i| i.summary.status.is_terminal()).await
    }

    /// The running server's own store, for tests that write beside it: on SQLite a second
    /// handle would be a second writer, refused while the server writes ("database is locked").
    pub fn server_store(&self) -> DynStore {
        self.server_store.clone()
    }

    /// A second handle on the same database, to check what was (not) written.
    pub async fn store(&self) -> DynStore {
        trellis::store::connect(&db_config(&self.database_url)).await.unwrap()
    }
}

/// The database at `url`. SQLite's master key is the key file beside the database (made on
/// first start); Postgres tests share [`TEST_MASTER_KEY`], as a real deployment's processes
/// share one key, rather than a key file in this user's data folder.
pub fn db_config(url: &str) -> DatabaseConfig {
    let master_key = url.starts_with("postgres").then(|| TEST_MASTER_KEY.into());
    DatabaseConfig { master_key, ..DatabaseConfig::direct(url, 8) }
}

/// A new, empty database of `backend`; the folder holds the SQLite file.
pub async fn fresh_database(backend: Backend) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = match backend {
        Backend::Sqlite => format!("sqlite://{}", dir.path().join("trellis.db").display()),
        Backend::Postgres => fresh_postgres_database().await,
    };
    (url, dir)
}

/// Creates an empty database on the test Postgres server and returns its URL.
/// `cargo xtask test` drops the `trellis_test_*` databases left by earlier runs.
pub async fn fresh_postgres_database() -> String {
    use sqlx::Connection;
    let admin_url = std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_POSTGRES.to_owned());
    let mut conn = sqlx::PgConnection::connect(&admin_url)
        .await
        .unwrap_or_else(|e| panic!("Postgres tests need a server at TEST_DATABASE_URL ({admin_url}): {e}"));
    let name = format!("trellis_test_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.unwrap();
    trellis::store::with_database(&admin_url, &name)
}

/// The node `id` of `instance`; panics when it has none.
pub fn node<'a>(instance: &'a InstanceDetail, id: &str) -> &'a NodeView {
    instance.nodes.iter().find(|n| n.id == id).unwrap_or_else(|| panic!("no node `{id}` in {instance:?}"))
}

/// A valid definition, `a -> b`, both no-ops, in the normalized form the API returns.
pub fn chain() -> Value {
    json!({
        "nodes": [{"id": "a", "type": "noop"}, {"id": "b", "type": "noop"}],
        "edges": [{"from": "a", "to": "b"}],
        "settings": {"on_limit": "queue"}
    })
}

/// `gate -> after`: the instance waits at `gate` until it is signaled, then ends.
pub fn gated() -> Value {
    json!({
        "nodes": [{"id": "gate", "type": "wait_signal"}, {"id": "after", "type": "noop"}],
        "edges": [{"from": "gate", "to": "after"}]
    })
}

/// Asserts an RFC 9457 problem with `status` and returns its body.
pub async fn problem(response: reqwest::Response, status: u16) -> Value {
    assert_eq!(response.status().as_u16(), status, "status");
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert_eq!(content_type, "application/problem+json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["status"], status);
    assert!(body["title"].is_string() && body["type"].is_string() && body["detail"].is_string(), "{body}");
    body
}

/// Runs each named test once on SQLite and once on Postgres: `<name>::sqlite`, `<name>::postgres`.
/// The tests are plain `async fn name(app: TestApp)` items, so rustfmt formats their bodies.
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::common::{Backend, TestApp};

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(TestApp::spawn(Backend::Sqlite).await).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(TestApp::spawn(Backend::Postgres).await).await
            }
        }
    )*};
}
pub(crate) use both_backends;

/// As [`both_backends`], for tests that start their own server (or none) and take only the
/// database kind.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::common::Backend;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(Backend::Sqlite).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(Backend::Postgres).await
            }
        }
    )*};
}
pub(crate) use on_both;
