//! What an instance's bad end (`failed`, `timed_out`) leaves to do, written by the transaction
//! that ends it so no crash can lose it: the `alert` item (`alert_items.rs` runs it) and the
//! `on_failure` item (`failure_handler.rs` runs it). Pure: `effects` calls it. Each item keeps
//! the run's end, since a retry may change the instance's row before the item runs.

use super::plan::Plan;
use crate::store::{NewWork, RunEnd, Work};
use chrono::{DateTime, Utc};
use trellis_model::InstanceStatus;

fn is_bad(status: InstanceStatus) -> bool {
    matches!(status, InstanceStatus::Failed | InstanceStatus::TimedOut)
}

/// The `alert` item of a bad end (rules are asked when it runs: most workflows have none).
pub(super) fn alert_item(
    run: i32,
    status: InstanceStatus,
    error: Option<&str>,
    failure: Option<&(Option<String>, String)>,
    now: DateTime<Utc>,
) -> Option<NewWork> {
    if !is_bad(status) {
        return None;
    }
    let (failed_node, error_class) = failure.map_or((None, None), |(node, class)| (node.clone(), Some(class.clone())));
    let end = RunEnd { run, status, error: error.map(str::to_owned), failed_node, error_class };
    Some(NewWork::due(Work::Alert(end), now))
}

/// The `on_failure` item of a bad end, if the version has a handler.
pub(super) fn failure_handler_item(
    plan: &Plan,
    run: i32,
    status: InstanceStatus,
    failed_node: Option<usize>,
    error: Option<String>,
    now: DateTime<Utc>,
) -> Option<NewWork> {
    plan.on_failure.as_ref()?;
    if !is_bad(status) {
        return None;
    }
    let failed_node = failed_node.map(|i| plan.nodes[i].id.clone());
    let end = RunEnd { run, status, error, failed_node, error_class: None };
    Some(NewWork::due(Work::OnFailure(end), now))
}
