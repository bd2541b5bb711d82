//! `trellis serve` as a separate process, for tests that kill or run several of them.

use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub struct Process {
    pub child: Child,
    pub base: String,
}

impl Process {
    /// The server binary on a free port with the test's settings, and `extra_env`.
    fn command(database_url: &str, extra_env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_trellis"));
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("DATABASE_URL", database_url)
            .env("TRELLIS_ADMIN_PASSWORD", crate::common::ADMIN_PASSWORD)
            .env("TRELLIS_JWT_SECRET", crate::common::JWT_SECRET)
            .env("TRELLIS_HTTP_ALLOW", "127.0.0.0/8")
            .env("RUST_LOG", "warn,trellis::server=info")
            .kill_on_drop(true);
        if database_url.starts_with("postgres") {
            // As `common::db_config`: not a key file in this user's data folder.
            command.env("TRELLIS_MASTER_KEY", crate::common::TEST_MASTER_KEY);
        }
        for (key, value) in extra_env {
            command.env(key, value);
        }
        command
    }

    /// Starts a server that is expected to refuse to start; returns what it printed.
    pub async fn refused(database_url: &str, extra_env: &[(&str, &str)]) -> String {
        let mut command = Self::command(database_url, extra_env);
        command.env("NO_COLOR", "1");
        let output = tokio::time::timeout(Duration::from_secs(30), command.output()).await.expect("exits").unwrap();
        assert!(!output.status.success(), "the server refused to start");
        String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
    }

    /// Starts the server binary on a free port and waits for it to listen.
    pub async fn start(database_url: &str, extra_env: &[(&str, &str)]) -> Process {
        let mut command = Self::command(database_url, extra_env);
        command.stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = command.spawn().expect("the trellis binary starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next_line().await.unwrap().expect("the server printed its address before exiting");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.trim().to_owned();
            }
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Process { child, base: format!("http://{addr}") }
    }

    /// SIGKILL: no drain, no lease release, whatever was in flight is cut off.
    pub async fn kill_hard(mut self) {
        self.child.kill().await.unwrap();
    }
}

/// Signs in as the bootstrap admin of the server at `base` and returns the access token.
pub async fn admin_token(http: &reqwest::Client, base: &str) -> String {
    let response = http
        .post(format!("{base}/api/v1/auth/login"))
        .json(&serde_json::json!({"username": "admin", "password": crate::common::ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap();
    response.json::<trellis_model::api::TokenResponse>().await.unwrap().access_token
}

/// A signed-in API client for a server process.
pub struct Api {
    pub http: reqwest::Client,
    pub base: String,
    pub token: String,
}

impl Api {
    pub async fn connect(base: &str) -> Api {
        let http = trellis::http_client::builder().build().unwrap();
        let token = crate::process::admin_token(&http, base).await;
        Api { http, base: base.to_owned(), token }
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r =
            self.http.post(format!("{}{path}", self.base)).bearer_auth(&self.token).json(&body).send().await.unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn publish(&self, definition: Value) -> String {
        let (_, created) = self.post("/api/v1/workflows", json!({"name": "durable", "definition": definition})).await;
        let id = created["id"].as_str().unwrap().to_owned();
        assert_eq!(self.post(&format!("/api/v1/workflows/{id}/versions"), json!({})).await.0, 201);
        id
    }

    /// Waits until no instance of `workflow` is queued or running; returns the counts.
    pub async fn settle(&self, workflow: &str, limit: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let list = self.get(&format!("/api/v1/instances?workflow={workflow}&limit=1")).await;
            let counts = list["counts"].clone();
            let open = counts["queued"].as_i64().unwrap() + counts["running"].as_i64().unwrap();
            if open == 0 || tokio::time::Instant::now() > deadline {
                return counts;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
