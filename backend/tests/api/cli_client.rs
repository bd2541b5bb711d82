//! `trellis` as a client: the real binary against a real server on port 0, on both
//! databases, as a script would run it (no terminal: plain lines, `--yes`).

use crate::common::{both_backends, chain, gated, TestApp};
use serde_json::{json, Value};
use std::process::{Output, Stdio};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use trellis_model::InstanceStatus;

/// A client configured by environment, as CI would run it: the server's URL, an API key,
/// and a config folder of its own (so no test reads or writes the user's).
pub struct Client {
    env: Vec<(&'static str, String)>,
    pub config: tempfile::TempDir,
}

impl Client {
    pub async fn new(app: &TestApp) -> Client {
        let created =
            app.post("/api/v1/api-keys").json(&json!({"name": "cli", "role": "editor"})).send().await.unwrap();
        assert_eq!(created.status(), 201);
        let key = created.json::<Value>().await.unwrap()["key"].as_str().unwrap().to_owned();
        Client::with_env(vec![("TRELLIS_URL", app.url("")), ("TRELLIS_TOKEN", key)])
    }

    pub fn with_env(env: Vec<(&'static str, String)>) -> Client {
        Client { env, config: tempfile::tempdir().unwrap() }
    }

    /// The API key this client was given.
    pub fn token(&self) -> String {
        self.env.iter().find(|(k, _)| *k == "TRELLIS_TOKEN").map(|(_, v)| v.clone()).unwrap_or_default()
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, "").await
    }

    pub async fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_trellis"));
        command
            .args(args)
            .env_remove("TRELLIS_URL")
            .env_remove("TRELLIS_TOKEN")
            .env_remove("TRELLIS_PROFILE")
            .env("TRELLIS_CONFIG_DIR", self.config.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let mut child = command.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).await.unwrap();
        drop(input);
        child.wait_with_output().await.unwrap()
    }
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit code `code`, else a failure showing what the command printed.
pub fn assert_exit(out: &Output, code: i32) {
    assert_eq!(out.status.code(), Some(code), "stdout: {}\nstderr: {}", stdout(out), stderr(out));
}

both_backends!(
    start_wait_exits_zero_only_when_the_instance_succeeded,
    watch_prints_every_node_of_a_running_instance_and_ends,
    a_bulk_retry_runs_to_the_end_with_progress_lines,
    every_list_parses_as_json,
    one_instance_is_signaled_canceled_retried_and_purged,
    global_flags_go_before_or_after_the_command_and_times_may_be_relative,
);

async fn start_wait_exits_zero_only_when_the_instance_succeeded(app: TestApp) {
    let cli = Client::new(&app).await;
    let good = app.publish(chain()).await;
    let out = cli.run(&["instance", "start", &good, "--input", r#"{"n": 1}"#, "--wait", "-o", "json"]).await;
    assert_exit(&out, 0);
    let detail: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(detail["status"], "succeeded");
    assert_eq!(detail["input"], json!({"n": 1}));

    let bad = app.publish(json!({"nodes": [{"id": "boom", "type": "fail", "config": {"message": "no"}}]})).await;
    let out = cli.run(&["instance", "start", &bad, "--wait"]).await;
    assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(text.contains("status") && text.contains("failed") && text.contains("boom"), "{text}");

    // Without --wait: the start's answer, at once.
    let out = cli.run(&["instance", "start", &good, "-o", "json", "--idempotency-key", "k1"]).await;
    assert_exit(&out, 0);
    let again = cli.run(&["instance", "start", &good, "-o", "json", "--idempotency-key", "k1"]).await;
    let first: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(first["id"], serde_json::from_str::<Value>(&stdout(&again)).unwrap()["id"]);
}

async fn watch_prints_every_node_of_a_running_instance_and_ends(app: TestApp) {
    let cli = Client::new(&app).await;
    let wf = app.publish(gated()).await;
    let id = app.start(&wf, json!({})).await;
    app.wait_for(&id, |i| i.nodes.iter().any(|n| n.id == "gate" && n.status.to_string() == "waiting")).await;
    let args = ["instance", "watch", id.as_str()];
    let watching = cli.run(&args);
    let signal = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let sent =
            app.post(&format!("/api/v1/instances/{id}/signal")).json(&json!({"node": "gate"})).send().await.unwrap();
        assert!(sent.status().is_success());
    };
    let (out, ()) = tokio::join!(watching, signal);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for line in ["node gate: waiting", "node gate: succeeded", "node after: succeeded", "instance: succeeded"] {
        assert!(text.contains(line), "`{line}` missing from:\n{text}");
    }
    assert!(text.find("node gate: succeeded") < text.find("node after: succeeded"), "{text}");
}

async fn a_bulk_retry_runs_to_the_end_with_progress_lines(app: TestApp) {
    let cli = Client::new(&app).await;
    let (wf, ids) = app.failed_once_instances(3).await;
    let dry = cli.run(&["instance", "retry", "--status", "failed", "--workflow", &wf, "--dry-run", "-o", "json"]).await;
    assert_exit(&dry, 0);
    assert_eq!(serde_json::from_str::<Value>(&stdout(&dry)).unwrap()["matched"], 3);

    let refused = cli.run(&["instance", "retry", "--status", "failed", "--workflow", &wf]).await;
    assert_exit(&refused, 2); // not a terminal and no --yes: nothing is done
    assert!(stderr(&refused).contains("--yes"), "{}", stderr(&refused));

    let out = cli.run(&["instance", "retry", "--status", "failed", "--workflow", &wf, "--yes"]).await;
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.lines().any(|l| l.starts_with("retry job ") && l.contains("3/3 done, 0 failed (succeeded)")),
        "{text}"
    );
    assert!(!text.contains('\r'), "no progress bar off a terminal: {text:?}");
    for id in &ids {
        assert_eq!(app.wait_finished(id).await.summary.status, InstanceStatus::Succeeded);
    }
}

async fn every_list_parses_as_json(app: TestApp) {
    let cli = Client::new(&app).await;
    let wf = app.publish(chain()).await;
    let instance = app.start(&wf, json!({})).await;
    app.wait_finished(&instance).await;
    let trigger = cli.run(&["trigger", "create", &wf, "--webhook", "-o", "json"]).await;
    assert_exit(&trigger, 0);
    let trigger: Value = serde_json::from_str(&stdout(&trigger)).unwrap();
    assert!(trigger["secret"].is_string());
    let trigger_id = trigger["id"].as_str().unwrap();
    let lists: [&[&str]; 6] = [
        &["instance", "list"],
        &["instance", "list", "--status", "succeeded", "--workflow", &wf],
        &["instance", "history", &instance],
        &["workflow", "list"],
        &["trigger", "list"],
        &["trigger", "deliveries", trigger_id],
    ];
    for args in lists {
        let out = cli.run(&[args, &["-o", "json"]].concat()).await;
        assert_exit(&out, 0);
        let parsed: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        assert!(parsed.is_array(), "{args:?}: {parsed}");
        let lines = cli.run(&[args, &["-o", "jsonl"]].concat()).await;
        for line in stdout(&lines).lines() {
            serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{args:?} jsonl: {e}"));
        }
        assert_eq!(stdout(&lines).lines().count(), parsed.as_array().unwrap().len(), "{args:?}");
        let table = cli.run(args).await;
        assert_exit(&table, 0);
        assert!(stdout(&table).lines().next().is_some_and(|h| h.chars().all(|c| !c.is_lowercase())), "{args:?}");
    }
    let listed: Value = serde_json::from_str(&stdout(&cli.run(&["instance", "list", "-o", "json"]).await)).unwrap();
    assert_eq!(listed[0]["id"], instance.as_str());
}

async fn one_instance_is_signaled_canceled_retried_and_purged(app: TestApp) {
    let cli = Client::new(&app).await;
    let wf = app.publish(json!({"nodes": [{"id": "gate", "type": "wait_signal"}]})).await;
    let waiting = |i: &trellis_model::api::InstanceDetail| i.nodes.iter().any(|n| n.status.to_string() == "waiting");
    let started = cli.run(&["instance", "start", &wf, "-o", "json"]).await;
    let id = serde_json::from_str::<Value>(&stdout(&started)).unwrap()["id"].as_str().unwrap().to_owned();
    app.wait_for(&id, waiting).await;
    let signaled = cli.run(&["instance", "signal", &id, "gate", "--payload", r#"{"ok": true}"#]).await;
    assert_exit(&signaled, 0);
    assert_eq!(app.wait_finished(&id).await.summary.status, InstanceStatus::Succeeded);
    assert_exit(&cli.run(&["instance", "purge", &id]).await, 0);
    assert_exit(&cli.run(&["instance", "show", &id]).await, 3);

    let other = app.start(&wf, json!({})).await;
    app.wait_for(&other, waiting).await;
    let canceled = cli.run(&["instance", "cancel", &other]).await;
    assert_exit(&canceled, 0);
    assert!(stdout(&canceled).contains("is now canceled"), "{}", stdout(&canceled));
    let retried = cli.run(&["instance", "retry", &other, "--from", "start", "-o", "json"]).await;
    assert_exit(&retried, 0);
    assert_ne!(serde_json::from_str::<Value>(&stdout(&retried)).unwrap()["status"], "canceled");
    // Running again: a purge is refused.
    let purge_running = cli.run(&["instance", "purge", &other]).await;
    assert_exit(&purge_running, 3);
}

async fn global_flags_go_before_or_after_the_command_and_times_may_be_relative(app: TestApp) {
    let cli = Client::new(&app).await;
    let wf = app.publish(chain()).await;
    let instance = app.start(&wf, json!({})).await;
    app.wait_finished(&instance).await;
    let ids = |out: &Output| -> Vec<String> {
        assert_exit(out, 0);
        let listed: Value = serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)));
        listed.as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(ids(&cli.run(&["--output", "json", "instance", "list"]).await), vec![instance.clone()]);
    assert_eq!(ids(&cli.run(&["-o", "json", "instance", "list", "--since", "1h"]).await), vec![instance.clone()]);
    assert_eq!(ids(&cli.run(&["instance", "-o", "json", "list", "--until", "2d"]).await), Vec::<String>::new());
    assert_eq!(
        ids(&cli.run(&["instance", "list", "--since", "30m", "--until", "2026-01-01T00:00:00Z", "-o", "json"]).await)
            .len(),
        0
    );

    // --url and --token before the command, with nothing in the environment.
    let bare = Client::with_env(vec![]);
    let out = bare.run(&["--url", &app.url(""), "--token", &cli.token(), "-o", "json", "workflow", "list"]).await;
    assert_exit(&out, 0);
    assert!(serde_json::from_str::<Value>(&stdout(&out)).unwrap().is_array());

    // The bulk actions take the same times.
    for (time, matched) in [("--since", 1), ("--until", 0)] {
        let out = cli.run(&["-o", "json", "instance", "purge", time, "1h", "--dry-run"]).await;
        assert_exit(&out, 0);
        let preview: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
        assert_eq!(preview["matched"], matched, "{time}: {preview}");
    }
}
