//! A chain: the events of one instance committed together in one batch (`commit/`). The
//! first consumes the fenced work item; each later one is the result of an attempt run ahead
//! of that commit (`ahead.rs`). Pure data, shared by the runner, run ahead and commit.

use super::effects::Detail;
use super::machine::Event;
use crate::store::Ahead;

/// One event of a chain committed together: the first consumes the fenced work item, each
/// later one is the result of an attempt run ahead of that commit (`ahead.rs`).
#[derive(Clone)]
pub(super) struct Link {
    pub ahead: Option<Ahead>,
    pub event: Event,
    pub detail: Detail,
}

impl Link {
    pub(super) fn new(event: Event, detail: Detail) -> Link {
        Link { ahead: None, event, detail }
    }
}
