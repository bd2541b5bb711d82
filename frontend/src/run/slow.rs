//! Whether a node is slow now, and how to say so: the server marks a node it found past its
//! threshold (`slow`), and the page keeps judging while it stays open, from the node's start
//! and threshold (`slow_after_ms`), so a node becoming slow shows without a reread.

use chrono::{DateTime, Utc};
use trellis_model::api::NodeView;

/// The text shown beside a slow node ("slow: over 500 ms, its stuck_after_ms"), or `None`
/// when it is not slow. `live_status` is the node's status as the stream last told it.
pub fn slow_text(node: &NodeView, live_status: &str, now: DateTime<Utc>) -> Option<String> {
    if !matches!(live_status, "running" | "waiting") {
        return None;
    }
    let threshold = node.slow_after_ms?;
    let past = node.started_at.is_some_and(|started| (now - started).num_milliseconds() > threshold);
    if !(node.slow || past) {
        return None;
    }
    let why = match node.slow_basis.as_deref() {
        Some("stuck_after_ms") => "its stuck_after_ms",
        _ => "a multiple of its recent p95",
    };
    let over = crate::format::run_duration(Some(DateTime::UNIX_EPOCH), DateTime::from_timestamp_millis(threshold));
    Some(format!("slow: over {over}, {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_model::NodeStatus;

    fn node(started_ms_ago: i64, threshold: Option<i64>, now: DateTime<Utc>) -> NodeView {
        NodeView {
            id: "wait".into(),
            status: NodeStatus::Waiting,
            attempts: 1,
            started_at: Some(now - chrono::Duration::milliseconds(started_ms_ago)),
            ended_at: None,
            output: None,
            error: None,
            child: None,
            child_status: None,
            items: None,
            slow: false,
            slow_after_ms: threshold,
            slow_basis: Some("stuck_after_ms".into()),
            approval: None,
        }
    }

    #[test]
    fn a_node_past_its_threshold_is_slow_while_it_runs() {
        let now = Utc::now();
        assert_eq!(
            slow_text(&node(600, Some(500), now), "waiting", now).unwrap(),
            "slow: over 500 ms, its stuck_after_ms"
        );
        assert_eq!(slow_text(&node(400, Some(500), now), "waiting", now), None, "not yet");
        assert_eq!(slow_text(&node(600, Some(500), now), "succeeded", now), None, "it finished");
        assert_eq!(slow_text(&node(600, None, now), "running", now), None, "no threshold");
    }
}
