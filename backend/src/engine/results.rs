//! An attempt's result as the engine records it: made storable, then turned into the
//! machine's event and the detail recorded with it.

use super::effects::Detail;
use super::machine::Event;
use super::nodes::{NodeResult, Suspend};
use crate::secrets::Redactor;
use crate::store::{NewWork, NodeAttempt, Work};
use chrono::Utc;
use serde_json::Value;

/// What an attempt's result stores: U+0000 kept out (see `json.rs`) and every form of the
/// secrets the attempt used replaced by `[secret:NAME]` (see `secrets::redact`), in its output,
/// error and task input alike. A child's input is made storable where every child start
/// passes (`children.rs`), a map item's too.
pub(super) fn sanitized(result: NodeResult, redactor: &Redactor) -> NodeResult {
    let clean = |value: &mut Value| make_storable(value, redactor);
    match result {
        NodeResult::Done { mut output, mut outcome } => {
            clean(&mut output);
            if let Some(label) = &mut outcome {
                redactor.string(label);
            }
            NodeResult::Done { output, outcome }
        }
        NodeResult::Failed { error, retryable } => {
            NodeResult::Failed { error: redactor.text(&super::json::replace_nul_str(&error)).into_owned(), retryable }
        }
        NodeResult::Busy { error, retry_after } => {
            NodeResult::Busy { error: redactor.text(&super::json::replace_nul_str(&error)).into_owned(), retry_after }
        }
        NodeResult::Suspend(Suspend::Task { queue, mut input }) => {
            clean(&mut input);
            NodeResult::Suspend(Suspend::Task { queue, input })
        }
        NodeResult::Suspend(Suspend::Approval { mut title, mut description }) => {
            redactor.string(&mut title);
            if let Some(text) = &mut description {
                redactor.string(text);
            }
            let title = super::json::replace_nul_str(&title);
            let description = description.map(|d| super::json::replace_nul_str(&d));
            NodeResult::Suspend(Suspend::Approval { title, description })
        }
        other => other,
    }
}

/// Makes `value` storable: U+0000 replaced, every form of the secrets `redactor` holds redacted.
pub(super) fn make_storable(value: &mut Value, redactor: &Redactor) {
    super::json::replace_nul(value);
    redactor.value(value);
}

/// The machine event for an attempt's result, and what to record with it.
pub(super) fn outcome(result: NodeResult, node: usize, attempt: u32, node_id: &str) -> (Event, Detail) {
    match result {
        NodeResult::Done { output: out, outcome } => (Event::Succeeded { node, attempt, outcome }, output(out)),
        NodeResult::Failed { error, retryable } => (
            Event::Failed { node, attempt, retryable, timed_out: false },
            Detail { error: Some(error), ..Default::default() },
        ),
        NodeResult::Busy { error, retry_after } => (
            Event::Failed { node, attempt, retryable: true, timed_out: false },
            Detail { error: Some(error), busy_for: Some(retry_after), ..Default::default() },
        ),
        NodeResult::Suspend(suspend) => (Event::Suspended { node, attempt }, suspension(node_id, attempt, suspend)),
    }
}

pub(super) fn output(value: Value) -> Detail {
    Detail { output: Some(value), ..Default::default() }
}

/// What a suspended attempt leaves behind: its timer or its task; a signal wait needs none.
fn suspension(node: &str, attempt: u32, suspend: Suspend) -> Detail {
    let mut work = Vec::new();
    match suspend {
        Suspend::Until(at) => work.push(NewWork::due(Work::Resume(NodeAttempt::new(node, attempt)), at)),
        // The child's end writes what completes the attempt (see `children.rs`).
        // An approval's decision or timeout completes it (`approvals/`).
        Suspend::Signal | Suspend::Child { .. } | Suspend::Approval { .. } => {}
        Suspend::Task { queue, input } => {
            let task = Work::Task { attempt: NodeAttempt::new(node, attempt), queue, input };
            work.push(NewWork::due(task, Utc::now()))
        }
    }
    Detail { work, ..Default::default() }
}
