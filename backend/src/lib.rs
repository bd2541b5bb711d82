//! The Trellis server as a library, so integration tests can run it in-process on port 0.
//!
//! * [`cli`]: the `trellis` command line (`serve`, `migrate`, `user`, and the client commands).
//! * [`config`]: settings from flags and environment.
//! * [`server`]: wiring it together and serving until shutdown.
//! * [`http`]: the axum routers, one module per resource, and problem+json errors.
//! * [`auth`]: roles, passwords, sessions, JWTs, API keys and sign-in throttling.
//! * [`audit`]: the audit log's bounded queue and batch writer.
//! * [`engine`]: the durable DAG engine: pure state machine, commit path, runner, nodes.
//! * [`triggers`]: webhook and cron triggers.
//! * [`jobs`]: bulk jobs over many instances and the retention sweeper.
//! * [`alerts`]: rules that post a signed webhook when a run fails, times out or runs slow, or
//!   the queue stays deep; recorded once, sent apart.
//! * [`slow`]: nodes running past their own threshold or k× their recent p95.
//! * [`events`]: history entries after commit: live streams, metrics, OpenTelemetry.
//! * [`sandbox`]: where user code runs: the pool of sandbox worker processes, and the worker.
//! * [`secrets`]: secrets sealed at rest under a master key, opened per attempt, redacted.
//! * [`store`]: the `Store` trait and its Postgres and SQLite implementations.
//! * [`digest`]: SHA-256, for what is named or compared without being kept.
//! * [`http_client`]: the one builder of outbound HTTP clients (rustls on ring, Mozilla roots).

pub mod alerts;
pub mod audit;
pub mod auth;
pub mod backup;
pub mod cli;
pub mod cluster;
pub mod config;
pub mod digest;
pub mod engine;
pub mod events;
pub mod http;
pub mod http_client;
pub mod jobs;
pub mod sandbox;
pub mod secrets;
pub mod server;
pub mod slow;
pub mod standard_webhooks;
pub mod store;
pub mod transfer;
pub mod triggers;
pub mod upgrade;
