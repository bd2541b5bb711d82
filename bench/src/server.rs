//! A Trellis server process under test, and a signed-in client for it.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const PASSWORD: &str = "bench-password-123";

/// The master key of bench databases on Postgres (32 bytes, hex).
pub(crate) const BENCH_MASTER_KEY: &str = "be4c4be4c4be4c4be4c4be4c4be4c4be4c4be4c4be4c4be4c4be4c4be4c4be4c";

pub struct Server {
    child: Child,
    pub base: String,
}

impl Server {
    pub async fn start(binary: &str, database_url: &str) -> Result<Server> {
        Server::start_with(binary, database_url, &[]).await
    }

    /// A server with `env` besides the usual settings.
    pub async fn start_with(binary: &str, database_url: &str, env: &[(&str, &str)]) -> Result<Server> {
        let mut command = Command::new(binary);
        if database_url.starts_with("postgres") {
            // Every process on the bench database shares one master key (SQLite's key file
            // sits beside its database, in the bench's temporary folder).
            command.env("TRELLIS_MASTER_KEY", BENCH_MASTER_KEY);
        }
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .envs(env.iter().copied())
            .env("DATABASE_URL", database_url)
            .env("TRELLIS_ADMIN_PASSWORD", PASSWORD)
            .env("RUST_LOG", "warn,trellis::server=info")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {binary}"))?;
        let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let addr = loop {
            let Some(line) = lines.next_line().await? else { bail!("the server exited before listening") };
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.trim().to_owned();
            }
        };
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Server { child, base: format!("http://{addr}") })
    }

    /// The server's process id (`None` once it has exited).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Resident memory of the server process, in KiB.
    pub fn rss_kib(&self) -> Result<u64> {
        rss_kib_of(self.child.id().context("the server has exited")?)
    }
}

/// Resident memory of process `pid` (VmRSS), in KiB.
pub fn rss_kib_of(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).context("no VmRSS")?;
    Ok(line.split_whitespace().nth(1).context("VmRSS value")?.parse()?)
}

#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    pub async fn connect(server: &Server) -> Result<Api> {
        let http = trellis::http_client::builder().pool_max_idle_per_host(64).build()?;
        let login: Value = http
            .post(format!("{}/api/v1/auth/login", server.base))
            .json(&json!({"username": "admin", "password": PASSWORD}))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let token = login["access_token"].as_str().context("token")?.to_owned();
        Ok(Api { http, base: server.base.clone(), token })
    }

    pub async fn post(&self, path: &str, body: Value) -> Result<Value> {
        let response =
            self.http.post(format!("{}{path}", self.base)).bearer_auth(&self.token).json(&body).send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("POST {path}: {status}: {body}");
        }
        Ok(body)
    }

    pub async fn patch(&self, path: &str, body: Value) -> Result<Value> {
        let response =
            self.http.patch(format!("{}{path}", self.base)).bearer_auth(&self.token).json(&body).send().await?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("PATCH {path}: {status}: {body}");
        }
        Ok(body)
    }

    /// A streaming GET (server-sent events); the body is read by the caller.
    pub async fn stream(&self, path: &str) -> Result<reqwest::Response> {
        Ok(self.http.get(format!("{}{path}", self.base)).bearer_auth(&self.token).send().await?.error_for_status()?)
    }

    /// A counter from `/metrics` (OpenMetrics text): its `_total` sample. The sign-in token
    /// is enough under the default `TRELLIS_METRICS=token`.
    pub async fn counter(&self, name: &str) -> Result<f64> {
        let page = self.metrics().await?;
        let sample = format!("{name}_total ");
        let line = page.lines().find(|l| l.starts_with(&sample)).with_context(|| format!("no {name} on /metrics"))?;
        Ok(line[sample.len()..].trim().parse()?)
    }

    /// The `/metrics` page.
    pub async fn metrics(&self) -> Result<String> {
        let request = self.http.get(format!("{}/metrics", self.base)).bearer_auth(&self.token);
        Ok(request.send().await?.error_for_status()?.text().await?)
    }

    /// How long one GET of `path` takes to answer 200, with `credential` as the bearer (or none).
    pub async fn time_get(&self, path: &str, credential: Option<&str>) -> Result<Duration> {
        let request = self.http.get(format!("{}{path}", self.base));
        let request = match credential {
            Some(credential) => request.bearer_auth(credential),
            None => request,
        };
        let started = std::time::Instant::now();
        request.send().await?.error_for_status()?.bytes().await?;
        Ok(started.elapsed())
    }

    /// The signed-in session's access token.
    pub fn token(&self) -> &str {
        &self.token
    }

    pub async fn get(&self, path: &str) -> Result<Value> {
        Ok(self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?)
    }

    /// Creates and publishes a workflow; returns its id.
    pub async fn publish(&self, name: &str, definition: Value) -> Result<String> {
        let created = self.post("/api/v1/workflows", json!({"name": name, "definition": definition})).await?;
        let id = created["id"].as_str().context("id")?.to_owned();
        self.post(&format!("/api/v1/workflows/{id}/versions"), json!({})).await?;
        Ok(id)
    }

    pub async fn start(&self, workflow: &str) -> Result<String> {
        let started = self.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({})).await?;
        Ok(started["id"].as_str().context("id")?.to_owned())
    }

    /// Starts `count` instances with `parallel` requests in flight.
    pub async fn start_many(&self, workflow: &str, count: usize, parallel: usize) -> Result<()> {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..parallel {
            let (api, workflow) = (self.clone(), workflow.to_owned());
            let share = count / parallel + usize::from(i < count % parallel);
            set.spawn(async move {
                for _ in 0..share {
                    api.start(&workflow).await?;
                }
                anyhow::Ok(())
            });
        }
        while let Some(done) = set.join_next().await {
            done??;
        }
        Ok(())
    }

    /// Polls an instance until it has succeeded and returns its detail.
    pub async fn wait_succeeded(&self, id: &str, poll: Duration) -> Result<Value> {
        loop {
            let detail = self.get(&format!("/api/v1/instances/{id}")).await?;
            match detail["status"].as_str() {
                Some("succeeded") => return Ok(detail),
                Some("failed" | "canceled" | "timed_out") => bail!("instance {id} ended {}", detail["status"]),
                _ => tokio::time::sleep(poll).await,
            }
        }
    }

    /// Starts an instance of `workflow`, waits (polling every `poll`) until it succeeded, and
    /// returns its time from created to ended as the server recorded them.
    pub async fn instance_time_ms(&self, workflow: &str, poll: Duration) -> Result<Option<f64>> {
        let id = self.start(workflow).await?;
        let detail = self.wait_succeeded(&id, poll).await?;
        let (created, ended) = (detail["created_at"].as_str(), detail["ended_at"].as_str());
        Ok(crate::stats::millis(created.unwrap_or_default(), ended.unwrap_or_default()))
    }

    /// Waits until `workflow` has no queued or running instance.
    pub async fn drain(&self, workflow: &str, poll: Duration) -> Result<Value> {
        loop {
            let counts = self.get(&format!("/api/v1/instances?workflow={workflow}&limit=1")).await?["counts"].clone();
            if counts["queued"].as_i64() == Some(0) && counts["running"].as_i64() == Some(0) {
                return Ok(counts);
            }
            tokio::time::sleep(poll).await;
        }
    }
}
