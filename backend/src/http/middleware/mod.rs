//! What every route shares, whatever resource it serves: the layers around the routers
//! (`edge`, `headers`, `csrf`, `audit_trail`, `sandbox_wait`), and what each handler extracts and answers
//! with (`authed`, `extract` with its `strict` JSON bodies, `error`'s problem+json).

pub mod audit_trail;
pub mod authed;
pub mod csrf;
pub mod edge;
pub mod error;
pub mod extract;
pub mod headers;
pub mod sandbox_wait;
pub mod strict;
