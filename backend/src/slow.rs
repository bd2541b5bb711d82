//! Slow runs: a node running (or waiting) longer than its own `stuck_after_ms`, or, without
//! one, longer than k× the p95 of its recent successful durations.
//!
//! The thresholds live in `slow_thresholds`, so the list's `?slow=true` is a join of running
//! node rows to one indexed row each, never a percentile per request: `stuck_after_ms` rows are
//! written with the version, and the `Refresher` (every process, every
//! `TRELLIS_SLOW_REFRESH_SECS`) recomputes the p95 rows of the nodes running now from their
//! last `SAMPLE` successful runs (at most `SAMPLE` rows read per running node). A p95 rule
//! needs `MIN_SAMPLES` runs and never goes below the floor, so a new or sub-millisecond node is
//! not flagged. Any process may refresh: the rows are upserts of the same values.

use crate::store::{RunningNode, SlowStore};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use trellis_model::Definition;
use uuid::Uuid;

/// Successful runs a p95 is computed over: the latest of the same workflow and node.
pub const SAMPLE: i64 = 100;
/// Fewer successful runs than this: no p95 rule (too little to know what is usual).
pub const MIN_SAMPLES: usize = 20;

/// How slowness is judged when a node has no `stuck_after_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowRule {
    /// k: slow beyond k× the p95.
    pub factor: f64,
    /// Never slow before this many ms, whatever the p95.
    pub floor_ms: i64,
}

impl SlowRule {
    /// Read from the server's settings. A factor below 1 would flag the usual run, so it is
    /// held at 1.
    pub fn from_config(c: &crate::config::ServeConfig) -> SlowRule {
        let factor = if c.slow_factor.is_finite() { c.slow_factor.max(1.0) } else { 3.0 };
        SlowRule { factor, floor_ms: i64::try_from(c.slow_floor_ms).unwrap_or(i64::MAX) }
    }
}

impl Default for SlowRule {
    fn default() -> Self {
        SlowRule { factor: 3.0, floor_ms: 1_000 }
    }
}

impl SlowRule {
    /// The threshold from successful durations (ms), or none with too few of them.
    pub fn threshold(&self, durations: &[i64]) -> Option<i64> {
        if durations.len() < MIN_SAMPLES {
            return None;
        }
        let scaled = (p95(durations) as f64 * self.factor).ceil();
        Some((scaled.min(i64::MAX as f64) as i64).max(self.floor_ms))
    }
}

/// The 95th percentile by nearest rank (a value that occurred).
pub fn p95(durations: &[i64]) -> i64 {
    let mut sorted = durations.to_vec();
    sorted.sort_unstable();
    let rank = (sorted.len() * 95).div_ceil(100).max(1);
    sorted.get(rank - 1).copied().unwrap_or(0)
}

/// The nodes of `definition` with a `stuck_after_ms`, for publishing.
pub fn stuck_after(definition: &Definition) -> Vec<(String, i64)> {
    definition
        .nodes
        .iter()
        .filter_map(|n| n.stuck_after_ms.map(|ms| (n.id.clone(), i64::try_from(ms).unwrap_or(i64::MAX))))
        .collect()
}

/// Whether a node that started at `started` is past `threshold_ms` at `now`.
pub fn is_past(started: DateTime<Utc>, threshold_ms: i64, now: DateTime<Utc>) -> bool {
    (now - started).num_milliseconds() > threshold_ms
}

/// Recomputes the p95 thresholds of the nodes running now, periodically.
pub struct Refresher {
    store: Arc<dyn SlowStore>,
    rule: SlowRule,
    every: Duration,
}

impl Refresher {
    pub fn new(store: Arc<dyn SlowStore>, rule: SlowRule, every: Duration) -> Refresher {
        Refresher { store, rule, every: every.max(Duration::from_millis(100)) }
    }

    /// Refreshes every `every` until `shutdown` turns true.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        while !*shutdown.borrow() {
            if let Err(e) = self.refresh().await {
                tracing::warn!(error = %e, "refreshing slow-run thresholds failed; trying again next round");
            }
            tokio::select! {
                _ = tokio::time::sleep(self.every) => {}
                _ = shutdown.changed() => {}
            }
        }
    }

    /// One pass: each (workflow, node) running now read once, written per running version.
    pub async fn refresh(&self) -> crate::store::Result<()> {
        let running = self.store.running_without_stuck_after().await?;
        let mut thresholds: HashMap<(Uuid, String), Option<i64>> = HashMap::new();
        for node in &running {
            let key = (node.workflow_id, node.node_id.clone());
            let threshold = match thresholds.get(&key) {
                Some(known) => *known,
                None => {
                    let known = self.threshold_of(node).await?;
                    thresholds.insert(key, known);
                    known
                }
            };
            self.store.put_p95_threshold(node, threshold, Utc::now()).await?;
        }
        Ok(())
    }

    async fn threshold_of(&self, node: &RunningNode) -> crate::store::Result<Option<i64>> {
        let runs = self.store.recent_durations(node.workflow_id, &node.node_id, SAMPLE).await?;
        let durations: Vec<i64> = runs.iter().map(|(start, end)| (*end - *start).num_milliseconds().max(0)).collect();
        Ok(self.rule.threshold(&durations))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_p95_is_a_value_that_occurred_by_nearest_rank() {
        let durations: Vec<i64> = (1..=100).collect();
        assert_eq!(p95(&durations), 95);
        assert_eq!(p95(&[7]), 7);
        assert_eq!(p95(&(1..=20).rev().collect::<Vec<_>>()), 19);
    }

    #[test]
    fn a_p95_rule_needs_enough_runs_and_keeps_to_the_floor() {
        let rule = SlowRule { factor: 3.0, floor_ms: 1_000 };
        assert_eq!(rule.threshold(&[500; 19]), None, "too few runs to judge");
        assert_eq!(rule.threshold(&[500; 20]), Some(1_500));
        assert_eq!(rule.threshold(&[0; 50]), Some(1_000), "sub-millisecond nodes meet the floor");
    }

    #[test]
    fn a_node_is_slow_only_past_its_threshold() {
        let start = Utc::now();
        assert!(!is_past(start, 1_000, start + chrono::Duration::milliseconds(1_000)));
        assert!(is_past(start, 1_000, start + chrono::Duration::milliseconds(1_001)));
    }
}
