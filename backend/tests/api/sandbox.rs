//! The sandbox workers: every kind of bomb fails only its own attempt with the limit it met,
//! the server's memory stays where it was, a killed worker fails one attempt and the retry
//! succeeds, and validation and previews of a bomb are refusals, not crashes.

use crate::bounds::rss_bytes;
use crate::common::{both_backends, node, problem, Backend, TestApp};
use serde_json::{json, Value};
use std::time::Duration;
use trellis_model::{InstanceStatus, NodeStatus};

const MEMORY_MESSAGE: &str = "exceeded the sandbox memory limit of 256 MiB";
const TIME_MESSAGE: &str = "exceeded the sandbox time limit of 3000 ms";
/// What folds into 300 MB while it compiles.
const FOLDING_BOMB: &str = "(('x' * 100000000) ~ ('x' * 100000000) ~ ('x' * 100000000)) | length";

/// Ten billion comparisons of strings for a few instructions: `==` charges fuel for the outer
/// lists' items only, and a lazily repeated list is within minijinja's own limits (it refuses to
/// repeat one past a hundred million items).
pub const SLOW_EXPRESSION: &str = "([[input.s] * 100000] * 100000) == ([[input.s] * 100000] * 100000)";

/// Expressions over `input.s = "x"` that allocate past 256 MiB, or compare ten billion items,
/// with operators no meter sees (the input keeps them from being folded while compiling), and
/// one that minijinja itself refuses before it runs.
const BOMBS: &[(&str, &str, &str)] = &[
    ("string repetition", "[input.s * 100000000, input.s * 100000000, input.s * 100000000] | length", MEMORY_MESSAGE),
    ("concatenation", "((input.s * 100000000) ~ (input.s * 100000000)) | length", MEMORY_MESSAGE),
    ("nested lists compared", SLOW_EXPRESSION, TIME_MESSAGE),
    ("list multiplication past minijinja's limit", "'y' in ([input.s] * 1000000000)", "repeated sequence is too large"),
    ("constant folding", FOLDING_BOMB, MEMORY_MESSAGE),
];

fn transform(expression: &str) -> Value {
    json!({"nodes": [{"id": "t", "type": "transform", "config": {"expression": expression}}]})
}

/// Runs a bomb and a harmless instance at once: the bomb fails with the limit's message,
/// the other succeeds. The bomb is published past the API's checks (which compile every
/// expression, and would refuse the ones that fail to compile): what this proves is that a
/// version holding one, however it got there, fails only its own attempt.
async fn bomb_beside_a_good_instance(app: &TestApp, bomb: Value) -> String {
    let bomb = app.publish_unchecked(bomb).await;
    let good = app.publish(transform("input.n + 1")).await;
    let bombed = app.start(&bomb, json!({"input": {"s": "x"}})).await;
    let fine = app.start(&good, json!({"input": {"n": 41}})).await;
    let fine = app.wait_finished(&fine).await;
    assert_eq!(fine.summary.status, InstanceStatus::Succeeded, "{fine:?}");
    assert_eq!(node(&fine, "t").output, Some(json!(42)));
    let bombed = app.wait_finished(&bombed).await;
    assert_eq!(bombed.summary.status, InstanceStatus::Failed, "{bombed:?}");
    bombed.nodes.iter().find_map(|n| n.error.clone()).unwrap_or_default()
}

/// This process's sandbox workers: each one's pid and state (`R` running, `S` waiting).
fn workers_with_state() -> Vec<(i32, String)> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // `pid (comm) state ppid ...`
        let Some((_, rest)) = stat.rsplit_once(") ") else { continue };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if fields.get(1) == Some(&me.as_str()) && String::from_utf8_lossy(&cmdline).contains("sandbox-worker") {
            found.push((pid, fields.first().copied().unwrap_or_default().to_owned()));
        }
    }
    found
}

fn workers() -> Vec<i32> {
    workers_with_state().into_iter().map(|(pid, _)| pid).collect()
}

/// The workers that are running (not waiting for a request).
pub fn busy_workers() -> Vec<i32> {
    workers_with_state().into_iter().filter(|(_, state)| state == "R").map(|(pid, _)| pid).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_has_no_environment_no_descriptors_but_its_pipes_and_a_syscall_filter() {
    let _app = TestApp::spawn(Backend::Sqlite).await;
    let pids = workers();
    assert_eq!(pids.len(), 3, "the pool's workers (two for scripts, one kept for expressions) start with the server");
    for pid in pids {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        assert!(environ.is_empty(), "a worker's environment is empty: {}", String::from_utf8_lossy(&environ));
        // Its pipes, and at most what this process was itself given by whatever started it
        // (a test runner's jobserver pipe): nothing the server opened.
        for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
            let fd = fd.unwrap().file_name().to_string_lossy().into_owned();
            let target = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).unwrap().to_string_lossy().into_owned();
            if ["0", "1", "2"].contains(&fd.as_str()) {
                assert!(target.starts_with("pipe:"), "fd {fd} is a pipe: {target}");
                continue;
            }
            assert!(!target.starts_with("socket:") && !target.contains(".db"), "fd {fd}: {target}");
            let ours = std::fs::read_link(format!("/proc/self/fd/{fd}")).map(|t| t.to_string_lossy().into_owned());
            assert_eq!(ours.ok(), Some(target), "fd {fd} came from above the server");
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let field = |name: &str| {
            status.lines().find(|l| l.starts_with(name)).unwrap().split_whitespace().nth(1).unwrap().to_owned()
        };
        assert_eq!(field("NoNewPrivs:"), "1");
        assert_eq!(field("Seccomp:"), "2", "in filter mode");
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let fsize = limits.lines().find(|l| l.starts_with("Max file size")).unwrap();
        assert!(fsize.split_whitespace().any(|w| w == "0"), "no file writes: {fsize}");
    }
}

async fn every_expression_bomb_fails_its_attempt_with_the_limit_and_the_server_stays_small(app: TestApp) {
    let app = respawn(&app, |serve| serve.sandbox_timeout_ms = 3_000).await;
    // Warm up (first requests allocate the server's own buffers).
    bomb_beside_a_good_instance(&app, transform("input.missing.field")).await;
    let before = rss_bytes();
    for (kind, expression, message) in BOMBS {
        let error = bomb_beside_a_good_instance(&app, transform(expression)).await;
        assert!(error.contains(message), "{kind}: {error}");
        assert!(error.starts_with("expression "), "{kind}: {error}");
    }
    let grown = rss_bytes().saturating_sub(before);
    assert!(grown < 50 * 1024 * 1024, "the server grew by {grown} bytes over the bombs");
    let metrics = app.get("/metrics").send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("trellis_sandbox_worker_restarts_total{cause=\"memory\"}"), "{metrics}");
}

async fn a_script_allowed_more_than_the_sandbox_meets_the_sandbox_limit(app: TestApp) {
    let source = "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);";
    let bomb = json!({"nodes": [{"id": "s", "type": "script", "config": {"source": source, "memory_mb": 1024, "timeout_ms": 20000}}]});
    let error = bomb_beside_a_good_instance(&app, bomb).await;
    assert_eq!(error, format!("script {MEMORY_MESSAGE}"));
}

async fn a_worker_killed_mid_evaluation_fails_one_attempt_and_the_retry_succeeds(app: TestApp) {
    let source = "if (instance.attempt === 1) { for (;;) {} } return 'second';";
    let workflow = app
        .publish(json!({"nodes": [{
            "id": "s", "type": "script",
            "config": {"source": source, "timeout_ms": 20000},
            "retry": {"max_attempts": 2, "backoff_ms": 10}
        }]}))
        .await;
    let id = app.start(&workflow, json!({})).await;
    let mut killed = Vec::new();
    for _ in 0..200 {
        killed = busy_workers();
        if !killed.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(killed.len(), 1, "one worker spins");
    std::process::Command::new("kill").args(["-9", &killed[0].to_string()]).status().unwrap();
    let done = app.wait_finished(&id).await;
    assert_eq!(done.summary.status, InstanceStatus::Succeeded, "{done:?}");
    let s = node(&done, "s");
    assert_eq!((s.status, s.attempts, s.output.clone()), (NodeStatus::Succeeded, 2, Some(json!("second"))));
    let history = crate::traces::history(&app, &id).await;
    let first = history.iter().find(|e| e["event"] == "span_end" && e["kind"] == "node").unwrap();
    let error = first["attributes"]["error"].as_str().unwrap_or_default().to_owned();
    assert!(error.contains("was killed") && error.contains("SIGKILL"), "{first}");
}

async fn saving_or_validating_a_constant_folding_bomb_is_a_refusal_naming_the_limit(app: TestApp) {
    let definition = |key: &str| {
        json!({
            "nodes": [{"id": "t", "type": "noop"}],
            "settings": {"concurrency_key": key, "max_per_key": 1}
        })
    };
    let refused = app
        .post("/api/v1/workflows")
        .json(&json!({"name": "fold", "definition": definition(FOLDING_BOMB)}))
        .send()
        .await
        .unwrap();
    // Kept as a draft, with the limit named as the key's problem.
    assert_eq!(refused.status(), 201);
    let body: Value = refused.json().await.unwrap();
    let errors = body["problems"].to_string();
    assert!(errors.contains(MEMORY_MESSAGE) && errors.contains("settings.concurrency_key"), "{body}");
    // The server is still here: the same check of a harmless key passes, a bomb does not.
    let id = app.create_workflow(json!({"name": "fold", "definition": definition("input.k")})).await.summary.id;
    let report: Value = app
        .post(&format!("/api/v1/workflows/{id}/validate"))
        .json(&definition(FOLDING_BOMB))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["valid"], false, "{report}");
    assert!(report["errors"].to_string().contains(MEMORY_MESSAGE), "{report}");
    let report: Value = app
        .post(&format!("/api/v1/workflows/{id}/validate"))
        .json(&definition("input.k"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(report["valid"], true, "{report}");
}

async fn previewing_a_script_bomb_is_a_422_naming_the_limit(app: TestApp) {
    let source = "const a = []; for (;;) a.push('x'.repeat(1 << 20) + a.length);";
    let response = app
        .post("/api/v1/scripts/preview")
        .json(&json!({"source": source, "memory_mb": 1024, "timeout_ms": 20000}))
        .send()
        .await
        .unwrap();
    let body = problem(response, 422).await;
    assert_eq!(body["detail"], format!("script {MEMORY_MESSAGE}"), "{body}");
    assert_eq!(body["failure"], "memory");
}

async fn a_result_over_the_output_cap_is_refused_before_it_reaches_the_server(app: TestApp) {
    let big = "[input.s * 1000000] * 6";
    let error = bomb_beside_a_good_instance(&app, transform(big)).await;
    assert!(
        error.starts_with("the result is 6000") && error.contains("the sandbox returns at most 5242880"),
        "{error}"
    );
}

async fn deep_nesting_and_a_huge_expression_fail_cleanly(app: TestApp) {
    let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let long = vec!["1"; 200_000].join("+");
    for expression in [deep, long] {
        let error = bomb_beside_a_good_instance(&app, transform(&expression)).await;
        assert!(!error.is_empty(), "a failure names its cause");
    }
}

async fn with_every_worker_busy_a_node_waits_its_turn_instead_of_failing(app: TestApp) {
    let app = respawn(&app, |serve| serve.sandbox_workers = Some(1)).await;
    let slow = app
        .publish(json!({"nodes": [{"id": "s", "type": "script",
        "config": {"source": "let n = 0; for (let i = 0; i < 1e7; i++) n += i; return n > 0;", "timeout_ms": 20000}}]}))
        .await;
    let quick = app.publish(transform("input.n * 2")).await;
    let first = app.start(&slow, json!({})).await;
    let second = app.start(&quick, json!({"input": {"n": 21}})).await;
    let second = app.wait_finished(&second).await;
    assert_eq!(second.summary.status, InstanceStatus::Succeeded, "{second:?}");
    assert_eq!(node(&second, "t").output, Some(json!(42)));
    assert_eq!(app.wait_finished(&first).await.summary.status, InstanceStatus::Succeeded);
}
both_backends!(
    every_expression_bomb_fails_its_attempt_with_the_limit_and_the_server_stays_small,
    a_script_allowed_more_than_the_sandbox_meets_the_sandbox_limit,
    a_worker_killed_mid_evaluation_fails_one_attempt_and_the_retry_succeeds,
    saving_or_validating_a_constant_folding_bomb_is_a_refusal_naming_the_limit,
    previewing_a_script_bomb_is_a_422_naming_the_limit,
    a_result_over_the_output_cap_is_refused_before_it_reaches_the_server,
    deep_nesting_and_a_huge_expression_fail_cleanly,
    with_every_worker_busy_a_node_waits_its_turn_instead_of_failing
);

/// A server of its own on a fresh database of the same kind as `app`'s, set up by `configure`.
async fn respawn(app: &TestApp, configure: impl FnOnce(&mut trellis::config::ServeConfig)) -> TestApp {
    let backend = if app.database_url.starts_with("sqlite") { Backend::Sqlite } else { Backend::Postgres };
    TestApp::spawn_with(backend, configure).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_unexecutable_worker_program_stops_the_server_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\n").unwrap();
    for (program, expected) in [(dir.path().join("missing"), "cannot be found"), (plain, "not an executable file")] {
        let (url, _db) = crate::common::fresh_database(Backend::Sqlite).await;
        let mut serve = trellis::config::ServeConfig::local();
        serve.sandbox_worker = Some(program);
        let refused = trellis::server::Server::build(crate::common::db_config(&url), serve).await;
        let error = format!("{:#}", refused.err().expect("the server refuses to start"));
        assert!(error.contains("sandbox worker") && error.contains(expected), "{error}");
    }
}
