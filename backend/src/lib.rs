//! The Trellis server as a library, so integration tests can run it in-process on port 0.
//!
//! * [`config`]: settings from flags and environment.
//! * [`digest`]: SHA-256, for what is named or compared without being kept.
//! * [`store`]: the `Store` trait and its Postgres and SQLite implementations.
//! * [`auth`]: roles, passwords, JWTs and API keys.
//! * [`events`]: history entries after commit: live streams, metrics, OpenTelemetry.
//! * [`http`]: the axum routers, one module per resource, and problem+json errors.
//! * [`http_client`]: the one builder of outbound HTTP clients (rustls on ring, Mozilla roots).
//! * [`server`]: wiring it together and serving until shutdown.

pub mod audit;
pub mod auth;
pub mod cli;
pub mod config;
pub mod digest;
pub mod engine;
pub mod events;
pub mod http;
pub mod http_client;
pub mod jobs;
pub mod server;
pub mod store;
pub mod triggers;
