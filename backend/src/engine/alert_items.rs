//! Alerts at an instance's end (`crate::alerts`): the transaction that ends an instance
//! `failed` or `timed_out` writes an `alert` work item (`bad_end::alert_item`, called from `effects`),
//! the same hook as failure handlers, so no end is missed whatever crashes. Its handler
//! (`raise_alerts`) records a delivery per matching rule under the key `{instance}:{run}`,
//! which the store keeps unique per rule: a redone item records nothing twice. Sending is
//! the alert sender's (`alerts::send`), never the engine's. A hook of its own (`Alerts`): it
//! holds the alert rules' store, the instances' (to consume its item) and the public URL.

use super::plan::Plan;
use crate::alerts::{group_key, instance_body, instance_url, InstanceFacts};
use crate::store::{AlertRuleRow, AlertStore, AlertedInstance, Fence, InstanceStore, NewDelivery, RunEnd, Writes};
use chrono::Utc;
use std::sync::Arc;
use trellis_model::api::AlertWhen;
use uuid::Uuid;

pub(super) struct Alerts {
    store: Arc<dyn AlertStore>,
    instances: Arc<dyn InstanceStore>,
    /// `TRELLIS_PUBLIC_URL`: the base of the instance links an alert carries.
    public_url: Option<String>,
}

impl Alerts {
    pub(super) fn new(
        store: Arc<dyn AlertStore>,
        instances: Arc<dyn InstanceStore>,
        public_url: Option<String>,
    ) -> Alerts {
        Alerts { store, instances, public_url }
    }

    /// Records the alerts of the bad end the item stands for, then consumes it. The rules are
    /// asked first: most workflows have none, and then nothing of the instance is read. An
    /// error leaves the item to its lease (recording again is harmless).
    pub(super) async fn raise(
        &self,
        (instance, fence): (Uuid, &Fence),
        end: &RunEnd,
        plan: &Plan,
    ) -> anyhow::Result<()> {
        if let Some(event) = AlertWhen::parse(end.status.as_str()) {
            let rules = self.store.alert_rules_on(event.as_str(), Some(plan.workflow)).await?;
            if !rules.is_empty() {
                if let Some(row) = self.store.alerted_instance(instance).await? {
                    self.record_alerts(event, &rules, &row, end, &plan.name).await?;
                }
            }
        }
        self.instances.transition(instance, Some(fence), &|_| Writes::default()).await?;
        Ok(())
    }

    /// One delivery per rule for the run's `end`, keyed `{instance}:{run}`.
    async fn record_alerts(
        &self,
        event: AlertWhen,
        rules: &[AlertRuleRow],
        row: &AlertedInstance,
        end: &RunEnd,
        workflow_name: &str,
    ) -> anyhow::Result<()> {
        let run = end.run;
        let status = end.status.as_str();
        let (error, failed_node) = (&end.error, &end.failed_node);
        let facts = InstanceFacts {
            event,
            instance: row.id,
            run: run.into(),
            version: row.version,
            workflow: row.workflow_id,
            workflow_name,
            status,
            error: error.as_deref(),
            failed_node: failed_node.as_deref(),
            slow_node: None,
        };
        let url = instance_url(self.public_url.as_deref(), row.id);
        let group = group_key(row.workflow_id, failed_node.as_deref(), end.error_class.as_deref());
        let now = Utc::now();
        for rule in rules {
            let body = instance_body((&rule.id, &rule.name), &facts, &url);
            let delivery = NewDelivery {
                id: Uuid::now_v7(),
                rule_id: rule.id,
                event: event.into(),
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

    /// Records an `approval_requested` delivery per matching rule, keyed by the approval, so a
    /// repeated ask records nothing twice. Trouble is logged: the approval stands without it.
    pub(super) async fn approval_requested(&self, plan: &Plan, approval: &crate::store::NewApproval) {
        if let Err(e) = self.record_approval(plan, approval).await {
            tracing::warn!(error = %e, approval = %approval.id, "recording an approval_requested alert failed");
        }
    }

    async fn record_approval(&self, plan: &Plan, approval: &crate::store::NewApproval) -> anyhow::Result<()> {
        let when = AlertWhen::ApprovalRequested;
        let rules = self.store.alert_rules_on(when.as_str(), Some(plan.workflow)).await?;
        let url = crate::alerts::approval_url(self.public_url.as_deref(), approval.id);
        for rule in rules {
            let body = crate::alerts::approval_body((&rule.id, &rule.name), approval, &plan.name, &url);
            let delivery = NewDelivery {
                id: Uuid::now_v7(),
                rule_id: rule.id,
                event: when.into(),
                source_key: format!("approval:{}:{}:{}", approval.instance_id, approval.node_id, approval.attempt),
                group_key: None,
                instance_id: Some(approval.instance_id),
                body: body.to_string(),
                now: Utc::now(),
                dedupe_since: None,
                sent: None,
            };
            self.store.record_delivery(&delivery).await?;
        }
        Ok(())
    }
}
