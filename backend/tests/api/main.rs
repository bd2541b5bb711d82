//! API tests: a real server on 127.0.0.1, real SQLite and real Postgres.
//! One binary for all of them keeps link time down.

mod common;

mod actions;
mod audit;
mod auth;
mod bad_input;
mod bounds;
mod cleanup;
mod cli;
mod concurrency_keys;
mod contention;
mod crash;
mod cron;
mod csrf;
mod drafts;
mod edge;
mod engine;
mod failures;
mod headers;
mod instance_list;
mod keys;
mod ledger;
mod live;
mod observability;
mod openapi;
mod outage;
mod process;
mod retention;
mod retry;
mod sandbox;
mod schema;
mod scripts;
mod sessions;
mod sign_in;
mod sse;
mod starts;
mod store;
mod stream_sessions;
mod subworkflows;
mod traces;
mod trigger_list;
mod user_admin;
mod webhooks;
mod workflows;
