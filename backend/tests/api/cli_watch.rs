//! `trellis instance watch` when the connection is cut mid-stream (it resumes with
//! `Last-Event-ID`: no entry missed, none printed twice) and on a retried instance (it ends on
//! the latest end, not the one the history replays first).

use crate::cli_client::{assert_exit, stdout, Client};
use crate::common::{both_backends, gated, TestApp};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

both_backends!(
    watch_resumes_after_the_connection_drops_without_repeating_an_entry,
    watch_of_a_retried_instance_ends_on_its_latest_end,
);

/// A loopback TCP proxy to the server that cuts its first connection to an event stream once
/// the first event has gone through, and keeps every request head it forwarded.
struct CuttingProxy {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
}

impl CuttingProxy {
    async fn start(upstream: String) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let heads = Arc::new(Mutex::new(Vec::new()));
        let seen = heads.clone();
        tokio::spawn(async move {
            let mut cut_one = false;
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&upstream).await.unwrap();
                let cut = !cut_one;
                cut_one = true;
                tokio::spawn(relay(client, server, cut, seen.clone()));
            }
        });
        CuttingProxy { url, heads }
    }

    fn stream_requests(&self) -> Vec<String> {
        self.heads.lock().unwrap().iter().filter(|h| h.contains("/events")).cloned().collect()
    }
}

/// Copies the request up and the answer down; with `cut`, closes both once the answer holds
/// a complete event (`id:` line and a blank line after it).
async fn relay(mut client: TcpStream, mut server: TcpStream, cut: bool, heads: Arc<Mutex<Vec<String>>>) {
    let mut head = vec![0u8; 16 * 1024];
    let n = client.read(&mut head).await.unwrap_or(0);
    heads.lock().unwrap().push(String::from_utf8_lossy(&head[..n]).to_lowercase());
    if server.write_all(&head[..n]).await.is_err() {
        return;
    }
    let mut answered = Vec::new();
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let n = match server.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if client.write_all(&buffer[..n]).await.is_err() {
            return;
        }
        answered.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&answered);
        if cut && text.find("\nid:").is_some_and(|at| text[at..].contains("\n\n")) {
            return; // both sockets drop here
        }
    }
}

async fn watch_resumes_after_the_connection_drops_without_repeating_an_entry(app: TestApp) {
    let wf = app.publish(gated()).await;
    let id = app.start(&wf, json!({})).await;
    app.wait_for(&id, |i| i.nodes.iter().any(|n| n.id == "gate" && n.status.to_string() == "waiting")).await;
    let direct = Client::new(&app).await;
    let server = app.url("");
    let proxy = CuttingProxy::start(server.trim_start_matches("http://").trim_end_matches('/').to_owned()).await;
    let token = direct.token();
    let cli = Client::with_env(vec![("TRELLIS_URL", proxy.url.clone()), ("TRELLIS_TOKEN", token)]);

    let args = ["instance", "watch", id.as_str(), "-o", "jsonl"];
    let watching = cli.run(&args);
    let signal = async {
        // Only after the watcher has come back on a second connection.
        for _ in 0..100 {
            if proxy.stream_requests().len() >= 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let sent =
            app.post(&format!("/api/v1/instances/{id}/signal")).json(&json!({"node": "gate"})).send().await.unwrap();
        assert!(sent.status().is_success());
    };
    let (out, ()) = tokio::join!(watching, signal);
    assert_exit(&out, 0);

    let requests = proxy.stream_requests();
    assert!(requests.len() >= 2, "the watcher reconnected: {requests:?}");
    assert!(requests[1].contains("last-event-id: "), "it resumed where it stopped: {}", requests[1]);
    let seqs: Vec<i64> = stdout(&out)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["seq"].as_i64().unwrap())
        .collect();
    let mut unique = seqs.clone();
    unique.dedup();
    assert_eq!(seqs, unique, "no entry printed twice");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "entries in order: {seqs:?}");
    let history = app.get(&format!("/api/v1/instances/{id}/history")).send().await.unwrap();
    let history: serde_json::Value = history.json().await.unwrap();
    let all: Vec<i64> = history["items"].as_array().unwrap().iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(seqs, all, "every entry of the history, none missed");
}

async fn watch_of_a_retried_instance_ends_on_its_latest_end(app: TestApp) {
    let cli = Client::new(&app).await;
    let (_, ids) = app.failed_once_instances(1).await;
    let id = &ids[0];
    let retried =
        app.post(&format!("/api/v1/instances/{id}/retry")).json(&json!({"from": "failed"})).send().await.unwrap();
    assert!(retried.status().is_success(), "{}", retried.text().await.unwrap());
    app.wait_for(id, |i| i.summary.status == trellis_model::InstanceStatus::Succeeded).await;

    let out = cli.run(&["instance", "watch", id.as_str()]).await;
    assert_exit(&out, 0);
    let text = stdout(&out);
    let failed = text.find("instance: failed").unwrap_or_else(|| panic!("the first end is replayed:\n{text}"));
    let succeeded = text.find("instance: succeeded").unwrap_or_else(|| panic!("the latest end is shown:\n{text}"));
    assert!(failed < succeeded, "{text}");
}
