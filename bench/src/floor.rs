//! The floor under the event-stream figures: a bare server-sent-event broadcaster on the
//! same HTTP stack as Trellis (axum over hyper), with no database, engine, history or auth.
//! It runs on its own two-thread runtime, like a server process would, and its figures are
//! what delivering the same frames to the same number of clients costs on this machine.
//! Trellis's delivery figures are reported as ratios to it.

use anyhow::{Context, Result};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use chrono::Utc;
use std::net::SocketAddr;
use tokio::sync::{broadcast, oneshot};

/// Frames per step: what one signal to a `wait_signal` chain writes to its history (two spans
/// end, the gate succeeds, the next one runs, its span starts, it waits, its wait span starts).
pub const FRAMES_PER_STEP: usize = 7;
/// Filler that brings a frame to the size of a typical history entry (about 400 bytes).
const PAD: &str = concat!(
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
);

/// A running floor server; dropping it stops the server.
pub struct Floor {
    pub base: String,
    steps: broadcast::Sender<Bytes>,
    _stop: oneshot::Sender<()>,
}

impl Floor {
    pub fn start() -> Result<Floor> {
        let (steps, _) = broadcast::channel::<Bytes>(64);
        let (stop, stopped) = oneshot::channel::<()>();
        let (bound, address) = std::sync::mpsc::channel::<std::io::Result<SocketAddr>>();
        let app = Router::new().route("/stream", get(stream)).with_state(steps.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("floor runtime");
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                    Ok(listener) => listener,
                    Err(e) => return drop(bound.send(Err(e))),
                };
                let _ = bound.send(listener.local_addr());
                let server = axum::serve(listener, app.into_make_service()).with_graceful_shutdown(async {
                    let _ = stopped.await;
                });
                let _ = server.await;
            });
        });
        let address = address.recv().context("the floor server thread died")??;
        Ok(Floor { base: format!("http://{address}"), steps, _stop: stop })
    }

    /// Sends one step's frames, stamped now, to every connected stream in one write each.
    pub fn step(&self, seq: usize) {
        let at = Utc::now().to_rfc3339();
        let mut chunk = String::new();
        for k in 0..FRAMES_PER_STEP {
            let id = seq * FRAMES_PER_STEP + k + 1;
            chunk.push_str(&format!(
                "id: {id}\nevent: node\ndata: {{\"at\":\"{at}\",\"event\":\"node\",\"pad\":\"{PAD}\"}}\n\n"
            ));
        }
        let _ = self.steps.send(Bytes::from(chunk));
    }

    /// Ends every stream after what was sent. (An empty chunk marks the end: the router's
    /// state holds a sender too, so the channel itself never closes while the server runs.)
    pub fn finish(&self) {
        let _ = self.steps.send(Bytes::new());
    }
}

/// A `ready` entry at once (the client's "caught up"), then every step until the end.
async fn stream(State(steps): State<broadcast::Sender<Bytes>>) -> Response {
    let ready =
        Bytes::from(format!("event: ready\ndata: {{\"at\":\"{}\",\"event\":\"ready\"}}\n\n", Utc::now().to_rfc3339()));
    let receiver = steps.subscribe();
    let frames = futures_util::stream::unfold((Some(ready), receiver), |(first, mut receiver)| async move {
        if let Some(ready) = first {
            return Some((Ok::<_, std::convert::Infallible>(ready), (None, receiver)));
        }
        loop {
            match receiver.recv().await {
                Ok(chunk) if chunk.is_empty() => return None,
                Ok(chunk) => return Some((Ok(chunk), (None, receiver))),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(frames))
        .expect("a static response")
}
