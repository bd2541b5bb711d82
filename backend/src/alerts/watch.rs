//! The periodic rules: `slow` (a running instance with a node past its slow threshold, once
//! per run) and `queue_depth` (more than `threshold` queued, continuously for `for_ms`, once
//! per stretch). Every process judges them; the delivery keys are the same in each —
//! `slow:{instance}:{run}`, and `queue_depth:{over_since}` where `over_since` is stored on the
//! rule by compare-and-swap — so however many judge, each alert is recorded once.

use super::{instance_body, instance_url, queue_body, InstanceFacts};
use crate::store::{AlertRuleRow, DynStore, InstanceQuery, NewDelivery, SlowInstance};
use chrono::{DateTime, Utc};
use std::time::Duration;
use tokio::sync::watch;
use trellis_model::api::AlertWhen;
use trellis_model::InstanceStatus;
use uuid::Uuid;

/// Slow node rows looked at per round. Only instances some rule has not alerted on for their
/// run are read, so a round after all are alerted reads none, and more than this many slow
/// instances are all alerted on within a few rounds.
pub const SLOW_PER_ROUND: i64 = 200;

pub struct Watcher {
    store: DynStore,
    hold: crate::cluster::Hold,
    public_url: Option<String>,
    every: Duration,
    slow_per_round: i64,
}

impl Watcher {
    pub fn new(store: DynStore, public_url: Option<String>, every: Duration) -> Watcher {
        Watcher { store, hold: Default::default(), public_url, every, slow_per_round: SLOW_PER_ROUND }
    }

    /// Judges nothing while `hold` is held (a restored copy's runs all look slow at first).
    pub fn held_by(self, hold: crate::cluster::Hold) -> Watcher {
        Watcher { hold, ..self }
    }

    /// Looks at `rows` slow node rows per round instead (tests: more slow runs than a round).
    pub fn slow_per_round(self, rows: i64) -> Watcher {
        Watcher { slow_per_round: rows.max(1), ..self }
    }

    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        while !*shutdown.borrow() {
            if !self.hold.pass(&mut shutdown).await {
                continue;
            }
            if let Err(e) = self.round().await {
                tracing::warn!(error = %e, "judging slow and queue alert rules failed; trying again next round");
            }
            tokio::select! {
                _ = tokio::time::sleep(self.every) => {}
                _ = shutdown.changed() => {}
            }
        }
    }

    /// Judges every rule once; returns how many slow instances were new to some rule.
    pub async fn round(&self) -> crate::store::Result<usize> {
        let slow_rules = self.store.alert_rules_on(AlertWhen::Slow.as_str(), None).await?;
        let judged = if slow_rules.is_empty() { 0 } else { self.judge_slow(&slow_rules).await? };
        for rule in self.store.alert_rules_on(AlertWhen::QueueDepth.as_str(), None).await? {
            self.judge_queue(&rule).await?;
        }
        Ok(judged)
    }

    /// Records a delivery per rule for each slow run not yet alerted on: the store reads only
    /// those (so nothing is re-read or re-written round after round), with what a body names.
    async fn judge_slow(&self, rules: &[AlertRuleRow]) -> crate::store::Result<usize> {
        let now = Utc::now();
        let scopes: Vec<(Uuid, Option<Uuid>)> = rules.iter().map(|r| (r.id, r.workflow_id)).collect();
        let mut rows = self.store.slow_unalerted(&scopes, now, self.slow_per_round).await?;
        // One alert per run, naming its first slow node: the rows come ordered by node.
        rows.dedup_by_key(|row| row.id);
        for row in &rows {
            let facts = slow_facts(row);
            let url = instance_url(self.public_url.as_deref(), row.id);
            for rule in rules.iter().filter(|r| r.workflow_id.is_none_or(|w| w == row.workflow_id)) {
                let body = instance_body((&rule.id, &rule.name), &facts, &url);
                let key = format!("slow:{}:{}", row.id, row.run);
                self.record(rule, AlertWhen::Slow, key, Some(row.id), body, now).await?;
            }
        }
        Ok(rows.len())
    }

    async fn judge_queue(&self, rule: &AlertRuleRow) -> crate::store::Result<()> {
        let threshold = rule.threshold.unwrap_or(0);
        let query = InstanceQuery {
            workflow: rule.workflow_id,
            statuses: vec![InstanceStatus::Queued],
            ..InstanceQuery::default()
        };
        let depth: i64 = self.store.count_instances(&query).await?.iter().map(|(_, n)| n).sum();
        if depth <= threshold {
            if rule.over_since.is_some() {
                self.store.clear_over(rule.id).await?;
            }
            return Ok(());
        }
        let now = Utc::now();
        let since = match rule.over_since {
            Some(since) => since,
            None => {
                self.store.mark_over(rule.id, now).await?;
                // Another process may have marked it first: its time is the stretch's key.
                match self.store.alert_rule(rule.id).await?.and_then(|r| r.over_since) {
                    Some(since) => since,
                    None => return Ok(()),
                }
            }
        };
        let for_ms = rule.for_ms.unwrap_or(0);
        if (now - since).num_milliseconds() < for_ms {
            return Ok(());
        }
        let workflow = match rule.workflow_id {
            Some(id) => Some((id, self.store.get_workflow(id).await?.map(|w| w.name).unwrap_or_default())),
            None => None,
        };
        let body = queue_body(
            (&rule.id, &rule.name),
            workflow.as_ref().map(|(id, n)| (*id, n.as_str())),
            depth,
            threshold,
            for_ms,
        );
        let key = format!("queue_depth:{}", since.timestamp_millis());
        self.record(rule, AlertWhen::QueueDepth, key, None, body, now).await
    }

    async fn record(
        &self,
        rule: &AlertRuleRow,
        event: AlertWhen,
        source_key: String,
        instance: Option<Uuid>,
        body: serde_json::Value,
        now: DateTime<Utc>,
    ) -> crate::store::Result<()> {
        let delivery = NewDelivery {
            id: Uuid::now_v7(),
            rule_id: rule.id,
            event: event.into(),
            source_key,
            group_key: None,
            instance_id: instance,
            body: body.to_string(),
            now,
            dedupe_since: None,
            sent: None,
        };
        self.store.record_delivery(&delivery).await?;
        Ok(())
    }
}

fn slow_facts(row: &SlowInstance) -> InstanceFacts<'_> {
    InstanceFacts {
        event: AlertWhen::Slow,
        instance: row.id,
        run: i64::from(row.run),
        version: row.version,
        workflow: row.workflow_id,
        workflow_name: &row.workflow_name,
        status: InstanceStatus::Running.as_str(),
        error: None,
        failed_node: None,
        slow_node: Some((&row.node_id, row.threshold_ms)),
    }
}
