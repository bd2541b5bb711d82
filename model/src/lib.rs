//! trellis-model: the vocabulary shared by the server and the SPA.
//!
//! * [`definition`]: the workflow definition format of the HTTP contract.
//! * [`config`]: the typed configuration of each node type ([`map`]: the `map` node's).
//! * [`expr`]: the expression evaluator of node configs (minijinja), shared with the designer.
//! * [`validate`]: structural and per-type validation, reporting every problem at once.
//! * [`api`]: request and response bodies of the HTTP API.
//! * [`trace`]: execution history entries, spans and W3C trace context.
//! * [`nesting`]: how deep stored JSON may nest; [`excerpt`]: short quotes of user input.
//!
//! Invariant: nothing here does I/O or reads the clock, so it compiles to wasm32 and the
//! designer can validate as the user types with exactly the rules the server applies.

pub mod api;
pub mod approval;
pub mod config;
pub mod definition;
pub mod excerpt;
pub mod expr;
pub mod failure;
pub mod flow;
pub mod json_len;
pub mod kinds;
pub mod map;
pub mod nesting;
pub mod node_types;
pub mod retry;
pub mod secret;
pub mod shared_limit;
#[cfg(feature = "sqlx")]
mod sql_text;
pub mod status;
pub mod trace;
pub mod validate;

pub use definition::{Definition, Edge, EdgeWhen, KeyReuse, Node, OnFailure, OnLimit, Position, RetryPolicy, Settings};
pub use kinds::{
    AlertDeliveryStatus, AlertEvent, DeliveryOutcome, JobKind, JobStatus, Role, TriggerKind, UserSource, WaitKind,
};
pub use status::{InstanceStatus, NodeStatus};
pub use validate::{validate, validate_with, Issue, Limits, Report, SyntaxCheck, Text};
