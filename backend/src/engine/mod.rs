//! The durable DAG engine: a pure state machine at the core, a shell that persists its
//! decisions and runs nodes around it.

pub mod machine;
pub mod plan;
