//! Open event streams end with their session: signing out (or any other revocation) is
//! noticed by a stream within `TRELLIS_SSE_REAUTH_MS`, not only by the next request.

use crate::common::{Backend, TestApp};
use serde_json::json;
use std::time::Duration;
use trellis_model::InstanceStatus;

/// Reads `response` until the server ends it; panics if it is still open after `within`.
async fn ends_within(mut response: reqwest::Response, within: Duration, what: &str) {
    let drained = async { while let Ok(Some(_)) = response.chunk().await {} };
    tokio::time::timeout(within, drained)
        .await
        .unwrap_or_else(|_| panic!("the {what} stream stayed open after sign-out"));
}

async fn a_signed_out_sessions_streams_end(backend: Backend) {
    let app = TestApp::spawn_with(backend, |serve| serve.sse_reauth_ms = 200).await;
    let token = app.token_for("viewer").await;
    let wf = app.publish(json!({"nodes": [{"id": "hold", "type": "wait_signal"}]})).await;
    let instance = app.start(&wf, json!({})).await;
    let open = |path: String| app.client.get(app.url(&path)).bearer_auth(&token).send();
    let follow = open(format!("/api/v1/instances/{instance}/events")).await.unwrap();
    let feed = open("/api/v1/events".to_owned()).await.unwrap();
    assert_eq!((follow.status().as_u16(), feed.status().as_u16()), (200, 200));

    let signed_out = app.client.post(app.url("/api/v1/auth/logout")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(signed_out.status(), 204);
    ends_within(follow, Duration::from_secs(10), "instance").await;
    ends_within(feed, Duration::from_secs(10), "dashboard feed").await;
    // The instance itself goes on: only the stream of the ended session stopped.
    assert_eq!(app.instance(&instance).await.summary.status, InstanceStatus::Running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_out_sessions_streams_end_sqlite() {
    a_signed_out_sessions_streams_end(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_out_sessions_streams_end_postgres() {
    a_signed_out_sessions_streams_end(Backend::Postgres).await;
}
