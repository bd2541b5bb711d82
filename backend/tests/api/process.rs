//! `trellis serve` as a separate process, for tests that kill or run several of them.

use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub struct Process {
    pub child: Child,
    pub base: String,
}

impl Process {
    /// Starts the server binary on a free port and waits for it to listen.
    pub async fn start(database_url: &str, extra_env: &[(&str, &str)]) -> Process {
        let mut command = Command::new(env!("CARGO_BIN_EXE_trellis"));
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("DATABASE_URL", database_url)
            .env("TRELLIS_ADMIN_PASSWORD", crate::common::ADMIN_PASSWORD)
            .env("TRELLIS_JWT_SECRET", crate::common::JWT_SECRET)
            .env("TRELLIS_HTTP_ALLOW", "127.0.0.0/8")
            .env("RUST_LOG", "warn,trellis::server=info")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (key, value) in extra_env {
            command.env(key, value);
        }
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
