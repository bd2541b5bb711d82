//! The resources: one module per resource, each with `router()` registering its handlers
//! with their OpenAPI operations. Merged under `/api/v1` in `http::api_routes`, except the
//! probes, metrics and webhook deliveries (`probes`, `hooks`) at the root, and the web app
//! (`spa`) as the fallback. `callees` (with `cycles`) and `sign_in` are checks the resources beside them share.

pub mod alerts;
pub mod api_keys;
mod approval_checks;
pub mod approvals;
pub mod audit_log;
pub mod bulk_jobs;
pub mod callees;
pub mod cluster;
mod cycles;
pub mod event_streams;
pub mod failure_handler_checks;
pub mod failures;
pub mod hooks;
pub mod instances;
pub mod limits;
pub mod probes;
pub mod retention;
pub mod scripts;
pub mod secrets;
pub mod session;
pub mod sign_in;
pub mod single_sign_on;
pub mod spa;
pub mod stats;
pub mod tasks;
pub mod trigger_management;
pub mod users;
pub mod versions;
pub mod views;
pub mod workflows;
