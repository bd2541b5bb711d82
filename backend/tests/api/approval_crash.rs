//! kill -9 with approvals waiting, some being decided and some timing out: after the restart
//! every decided approval's node went on exactly once, the undecided ones are still open and
//! decidable, and each timeout fired once.

use crate::approvals::asking;
use crate::common::{fresh_database, on_both, Backend};
use crate::process::{Api, Process};
use serde_json::{json, Value};
use std::time::Duration;

async fn open_approvals(api: &Api, want: usize) -> Vec<Value> {
    for _ in 0..600 {
        let page = api.get("/api/v1/approvals?status=open&limit=500").await;
        let items = page["items"].as_array().cloned().unwrap_or_default();
        if items.len() >= want {
            return items;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fewer than {want} approvals opened");
}

async fn approvals_survive_kill_9(backend: Backend) {
    let (url, _dir) = fresh_database(backend).await;
    let env = [("TRELLIS_LEASE_MS", "1500")];
    let first = Process::start(&url, &env).await;
    let api = Api::connect(&first.base).await;
    let decided = api.publish(asking(json!({"assignees": {"users": ["admin"]}, "allow_starter": true}))).await;
    let timed = api.publish(asking(json!({"assignees": {"roles": ["admin"]}, "timeout_ms": 3000}))).await;
    for (workflow, n) in [(&decided, 20), (&timed, 5)] {
        for i in 0..n {
            let (status, _) = api
                .post(&format!("/api/v1/workflows/{workflow}/instances"), json!({"input": {"amount": i, "who": "x"}}))
                .await;
            assert_eq!(status, 201);
        }
    }
    let open = open_approvals(&api, 25).await;
    let deciding: Vec<String> = open
        .iter()
        .filter(|a| a["workflow_id"] == decided.as_str())
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(deciding.len(), 20);
    // Half are decided, then the process is cut off without warning.
    for id in &deciding[..10] {
        let (status, body) =
            api.post(&format!("/api/v1/approvals/{id}/decision"), json!({"decision": "approve"})).await;
        assert_eq!(status, 200, "{body}");
    }
    first.kill_hard().await;

    let second = Process::start(&url, &env).await;
    let api = Api::connect(&second.base).await;
    for id in &deciding[10..] {
        let (status, body) =
            api.post(&format!("/api/v1/approvals/{id}/decision"), json!({"decision": "approve"})).await;
        assert_eq!(status, 200, "{body}");
    }
    for id in &deciding[..10] {
        let (status, _) = api.post(&format!("/api/v1/approvals/{id}/decision"), json!({"decision": "reject"})).await;
        assert_eq!(status, 409, "a decided approval stays decided");
    }
    let counts = api.settle(&decided, Duration::from_secs(60)).await;
    assert_eq!(counts["succeeded"], 20, "{counts}");
    let counts = api.settle(&timed, Duration::from_secs(60)).await;
    assert_eq!(counts["failed"], 5, "every timeout fired after the restart: {counts}");
    let list = api.get(&format!("/api/v1/instances?workflow={decided}&limit=100")).await;
    for summary in list["items"].as_array().unwrap() {
        let instance = api.get(&format!("/api/v1/instances/{}", summary["id"].as_str().unwrap())).await;
        let output = &instance["nodes"][0]["output"];
        assert_eq!(output["decision"], "approved", "{instance}");
        assert_eq!(output["decisions"].as_array().unwrap().len(), 1, "one decision counted once: {instance}");
        assert_eq!(instance["nodes"][0]["attempts"], 1, "{instance}");
    }
    let timed_out = api.get("/api/v1/approvals?status=closed&limit=500").await;
    let timed_out = timed_out["items"].as_array().unwrap().iter().filter(|a| a["status"] == "timed_out").count();
    assert_eq!(timed_out, 5);
}

on_both!(approvals_survive_kill_9);
