//! Alerts at an instance's end (`crate::alerts`): the transaction that ends an instance
//! `failed` or `timed_out` writes an `alert` work item (`work_item`, called from `effects`),
//! the same hook as failure handlers, so no end is missed whatever crashes. Its handler
//! (`raise_alerts`) records a delivery per matching rule under the key `{instance}:{run}`,
//! which the store keeps unique per rule: a redone item records nothing twice. Sending is
//! the alert sender's (`alerts::send`), never the engine's.

use super::effects::work;
use super::plan::Plan;
use super::Engine;
use crate::alerts::{group_key, instance_body, instance_url, InstanceFacts};
use crate::store::{AlertRuleRow, AlertedInstance, NewDelivery, NewWork, WorkItem, WorkKind};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::sync::Arc;
use trellis_model::api::AlertWhen;
use trellis_model::InstanceStatus;
use uuid::Uuid;

/// The `alert` item a bad end writes; its payload keeps the run's end (a retry may change
/// the row before the item runs).
pub(super) fn work_item(
    run: i32,
    status: InstanceStatus,
    error: Option<&str>,
    failure: Option<&(Option<String>, String)>,
    now: DateTime<Utc>,
) -> Option<NewWork> {
    if !matches!(status, InstanceStatus::Failed | InstanceStatus::TimedOut) {
        return None;
    }
    let (failed_node, error_class) = failure.map_or((None, None), |(node, class)| (node.clone(), Some(class.clone())));
    let payload = json!({
        "run": run, "status": status, "error": error, "failed_node": failed_node, "error_class": error_class,
    });
    Some(NewWork { payload: Some(payload), ..work(WorkKind::Alert, None, None, now) })
}

impl Engine {
    /// Records the alerts of the bad end the item stands for, then consumes it. The rules are
    /// asked first: most workflows have none, and then nothing of the instance is read. An
    /// error leaves the item to its lease (recording again is harmless).
    pub(super) async fn raise_alerts(self: &Arc<Self>, item: &WorkItem, plan: &Plan) -> anyhow::Result<()> {
        let Some(fence) = item.fence() else { return Ok(()) };
        let payload = item.payload.as_ref().map(|p| p.0.clone()).unwrap_or(Value::Null);
        let status = payload.get("status").and_then(Value::as_str).unwrap_or_default();
        if let Some(event) = AlertWhen::parse(status) {
            let rules = self.store.alert_rules_on(event.as_str(), Some(plan.workflow)).await?;
            if !rules.is_empty() {
                if let Some(row) = self.store.alerted_instance(item.instance_id).await? {
                    self.record_alerts(event, &rules, &row, &payload, &plan.name).await?;
                }
            }
        }
        self.consume(item.instance_id, &fence).await
    }

    /// One delivery per rule for the end `payload` describes, keyed `{instance}:{run}`.
    async fn record_alerts(
        &self,
        event: AlertWhen,
        rules: &[AlertRuleRow],
        row: &AlertedInstance,
        payload: &Value,
        workflow_name: &str,
    ) -> anyhow::Result<()> {
        let text = |name: &str| payload.get(name).and_then(Value::as_str).map(str::to_owned);
        let run = payload.get("run").and_then(Value::as_i64).unwrap_or(i64::from(row.run));
        let (status, error, failed_node) = (text("status").unwrap_or_default(), text("error"), text("failed_node"));
        let facts = InstanceFacts {
            event,
            instance: row.id,
            run,
            version: row.version,
            workflow: row.workflow_id,
            workflow_name,
            status: &status,
            error: error.as_deref(),
            failed_node: failed_node.as_deref(),
            slow_node: None,
        };
        let url = instance_url(self.config.public_url.as_deref(), row.id);
        let group = group_key(row.workflow_id, failed_node.as_deref(), text("error_class").as_deref());
        let now = Utc::now();
        for rule in rules {
            let body = instance_body((&rule.id, &rule.name), &facts, &url);
            let delivery = NewDelivery {
                id: Uuid::now_v7(),
                rule_id: rule.id,
                event: event.as_str().to_owned(),
                source_key: format!("{}:{run}", row.id),
                group_key: Some(group.clone()),
                instance_id: Some(row.id),
                body: body.to_string(),
                now,
                dedupe_since: rule.dedupe_ms.filter(|ms| *ms > 0).map(|ms| now - chrono::Duration::milliseconds(ms)),
                sent: None,
            };
            self.store.record_delivery(&delivery).await?;
        }
        Ok(())
    }
}
