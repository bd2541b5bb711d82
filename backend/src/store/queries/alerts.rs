//! `alerts.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::KeepBuilt;
use super::{push_binds, Store};
use crate::store::alerts::{
    AfterAttempt, AlertAttemptRow, AlertDeliveryRow, AlertRuleRow, AlertedInstance, DueAlert, NewDelivery,
    SlowInstance, ALERTED_INSTANCE, ATTEMPTS_OF_RULE, CLEAR_OVER, DELETE_RULE, DELIVERIES_OF, FINISH_DELIVERY,
    GROUP_LEADER, HAS_DELIVERY, INSERT_ATTEMPT, INSERT_DELIVERY, INSERT_RULE, MARK_OVER, RELEASE_LEASES, RULE, RULES,
    RULES_ON, RULES_ON_WORKFLOW, RULE_ADDRESSES_OF,
};
use crate::store::backend::Backend;
use crate::store::Result;
use chrono::{DateTime, Utc};
use const_format::{concatcp, str_replace};
use std::collections::HashMap;
use trellis_model::AlertDeliveryStatus;
use uuid::Uuid;

const LOCK_ROW: &str = <Store as Backend>::LOCK_ROW;
const SKIP_LOCKED: &str = <Store as Backend>::SKIP_LOCKED;
/// Taken before deciding whether an alert is suppressed, so two processes recording failures
/// of one group at once agree on which is delivered.
const LOCK_RULE: &str = concatcp!("SELECT id FROM alert_rules WHERE id = $1", LOCK_ROW);
const CLAIM: &str = concatcp!(
    "UPDATE alert_deliveries SET lease_owner = $1, lease_until = $3 WHERE id IN (SELECT id FROM alert_deliveries \
    WHERE status = 'pending' AND next_attempt_at <= $2 AND (lease_until IS NULL OR lease_until <= $2) \
    ORDER BY next_attempt_at LIMIT $4",
    SKIP_LOCKED,
    ") AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $2) RETURNING id, rule_id, body, attempts"
);

type Db = <Store as Backend>::Db;

const EPOCH_OF: &str = <Store as Backend>::EPOCH_OF;
/// The key a `slow` delivery of instance `i`'s run has (`alerts::watch`), built in SQL so that
/// instances already alerted on are left out by the unique index `(rule_id, source_key)`.
const SLOW_KEY: &str = concatcp!(
    "'slow:' || ",
    str_replace!(<Store as Backend>::UUID_TEXT, "{}", "i.id"),
    " || ':' || CAST(i.run AS TEXT)"
);
/// Running instances' node rows past their threshold (as `?slow=true`), with what an alert
/// names; the rules and the not-yet-alerted test follow (`slow_unalerted`).
const SLOW_NODES: &str = concatcp!(
    "SELECT i.id, i.workflow_id, i.version, i.run, w.name AS workflow_name, n.node_id, t.threshold_ms \
    FROM instances i JOIN workflows w ON w.id = i.workflow_id JOIN instance_nodes n ON n.instance_id = i.id \
    JOIN slow_thresholds t ON t.workflow_id = i.workflow_id AND t.version = i.version AND t.node_id = n.node_id \
    WHERE i.status = 'running' AND n.status IN ('running', 'waiting') AND n.started_at IS NOT NULL AND (",
    str_replace!(EPOCH_OF, "{}", "n.started_at"),
    ") * 1000 + t.threshold_ms < "
);
/// Finished deliveries past the age, oldest first; one that led its group within its rule's
/// dedupe window is kept (deleting it would let the group's next failure be sent).
const SWEEP_DELIVERIES: &str = concatcp!(
    "DELETE FROM alert_deliveries WHERE id IN (SELECT d.id FROM alert_deliveries d JOIN alert_rules r \
    ON r.id = d.rule_id WHERE d.status <> 'pending' AND d.created_at < $1 AND (r.dedupe_ms IS NULL \
    OR d.status = 'suppressed' OR (",
    str_replace!(EPOCH_OF, "{}", "d.created_at"),
    ") * 1000 + r.dedupe_ms < $2) ORDER BY d.created_at LIMIT $3)"
);

/// Logs one attempt of delivery `delivery`, in the transaction that moved it on.
async fn insert_attempt(tx: &mut sqlx::Transaction<'_, Db>, delivery: Uuid, a: &AlertAttemptRow) -> Result<()> {
    sqlx::query(INSERT_ATTEMPT)
        .bind(delivery)
        .bind(a.attempt)
        .bind(a.at)
        .bind(a.status_code)
        .bind(&a.error)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

#[async_trait::async_trait]
impl crate::store::AlertStore for Store {
    async fn insert_alert_rule(&self, r: &AlertRuleRow) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(INSERT_RULE)
            .bind(r.id)
            .bind(&r.name)
            .bind(r.event)
            .bind(r.workflow_id)
            .bind(&r.url)
            .bind(&r.secret)
            .bind(r.threshold)
            .bind(r.for_ms)
            .bind(r.dedupe_ms)
            .bind(r.over_since)
            .bind(&r.created_by)
            .bind(r.created_at)
            .bind(&r.owner_id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    async fn alert_rules(&self) -> Result<Vec<AlertRuleRow>> {
        Ok(sqlx::query_as(RULES).fetch_all(self.pool()).await?)
    }

    async fn alert_rule(&self, id: Uuid) -> Result<Option<AlertRuleRow>> {
        Ok(sqlx::query_as(RULE).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn delete_alert_rule(&self, id: Uuid) -> Result<bool> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query(DELETE_RULE).bind(id).execute(self.pool()).await?.rows_affected() == 1)
    }

    async fn alert_rules_on(&self, event: &str, workflow: Option<Uuid>) -> Result<Vec<AlertRuleRow>> {
        let rows = match workflow {
            Some(w) => sqlx::query_as(RULES_ON_WORKFLOW).bind(event).bind(w).fetch_all(self.pool()).await?,
            None => sqlx::query_as(RULES_ON).bind(event).fetch_all(self.pool()).await?,
        };
        Ok(rows)
    }

    async fn record_delivery(&self, new: &NewDelivery) -> Result<bool> {
        // A key already recorded (a periodic rule judged again, a redone item) ends here: one
        // read by the unique index, no write lock, no lock on the rule's row. Only the
        // retention sweep deletes deliveries, long after; the check under the lock below is
        // for two recorders racing.
        let known: Option<(Uuid,)> =
            sqlx::query_as(HAS_DELIVERY).bind(new.rule_id).bind(&new.source_key).fetch_optional(self.pool()).await?;
        if known.is_some() {
            return Ok(false);
        }
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let rule: Option<(Uuid,)> = sqlx::query_as(LOCK_RULE).bind(new.rule_id).fetch_optional(&mut *tx).await?;
        if rule.is_none() {
            return Ok(false);
        }
        let known: Option<(Uuid,)> =
            sqlx::query_as(HAS_DELIVERY).bind(new.rule_id).bind(&new.source_key).fetch_optional(&mut *tx).await?;
        if known.is_some() {
            return Ok(false);
        }
        let leader: Option<(Uuid,)> = match (&new.group_key, new.dedupe_since) {
            (Some(group), Some(since)) => {
                sqlx::query_as(GROUP_LEADER).bind(new.rule_id).bind(group).bind(since).fetch_optional(&mut *tx).await?
            }
            _ => None,
        };
        let (status, next) = match (leader, &new.sent) {
            (Some(_), _) => (AlertDeliveryStatus::Suppressed, None),
            (None, Some((true, _))) => (AlertDeliveryStatus::Delivered, None),
            (None, Some((false, _))) => (AlertDeliveryStatus::Failed, None),
            (None, None) => (AlertDeliveryStatus::Pending, Some(new.now)),
        };
        sqlx::query(INSERT_DELIVERY)
            .bind(new.id)
            .bind(new.rule_id)
            .bind(new.event)
            .bind(&new.source_key)
            .bind(&new.group_key)
            .bind(new.instance_id)
            .bind(&new.body)
            .bind(status)
            .bind(leader.map(|(id,)| id))
            .bind(i32::from(new.sent.is_some()))
            .bind(next)
            .bind(new.now)
            .execute(&mut *tx)
            .await?;
        if let Some((_, a)) = &new.sent {
            insert_attempt(&mut tx, new.id, a).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn claim_deliveries(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<DueAlert>> {
        let claimed: Vec<(Uuid, Uuid, String, i32)> = {
            let _guard = self.write_guard().await;
            sqlx::query_as(CLAIM).bind(owner).bind(now).bind(until).bind(limit).fetch_all(self.pool()).await?
        };
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        // Where and how to sign, for every rule of the batch in one read.
        let mut ids: Vec<Uuid> = claimed.iter().map(|(_, rule, _, _)| *rule).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut read = sqlx::QueryBuilder::<Db>::new(RULE_ADDRESSES_OF);
        push_binds(&mut read, ids.iter().copied());
        read.push(")");
        let rules: HashMap<Uuid, (String, String)> = read
            .build_query_as::<(Uuid, String, String)>()
            .keep_built()
            .fetch_all(self.pool())
            .await?
            .into_iter()
            .map(|(id, url, secret)| (id, (url, secret)))
            .collect();
        // A delivery whose rule was deleted meanwhile is not sent (its lease runs out).
        let due = claimed
            .into_iter()
            .filter_map(|(id, rule_id, body, attempts)| {
                let (url, secret) = rules.get(&rule_id)?.clone();
                Some(DueAlert { id, rule_id, body, attempts, url, secret })
            })
            .collect();
        Ok(due)
    }

    async fn finish_attempt(&self, a: &AlertAttemptRow, owner: &str, after: AfterAttempt) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let (status, next) = match after {
            AfterAttempt::Delivered => (AlertDeliveryStatus::Delivered, None),
            AfterAttempt::RetryAt(at) => (AlertDeliveryStatus::Pending, Some(at)),
            AfterAttempt::GaveUp => (AlertDeliveryStatus::Failed, None),
        };
        let moved = sqlx::query(FINISH_DELIVERY)
            .bind(a.delivery_id)
            .bind(owner)
            .bind(status)
            .bind(a.attempt)
            .bind(next)
            .execute(&mut *tx)
            .await?;
        if moved.rows_affected() != 1 {
            return Ok(false);
        }
        insert_attempt(&mut tx, a.delivery_id, a).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn deliveries_of(&self, rule: Uuid, limit: i64) -> Result<(Vec<AlertDeliveryRow>, Vec<AlertAttemptRow>)> {
        let deliveries: Vec<AlertDeliveryRow> =
            sqlx::query_as(DELIVERIES_OF).bind(rule).bind(limit).fetch_all(self.pool()).await?;
        let Some(oldest) = deliveries.iter().map(|d| d.created_at).min() else { return Ok((deliveries, Vec::new())) };
        let attempts = sqlx::query_as(ATTEMPTS_OF_RULE).bind(rule).bind(oldest).fetch_all(self.pool()).await?;
        Ok((deliveries, attempts))
    }

    async fn slow_unalerted(
        &self,
        rules: &[(Uuid, Option<Uuid>)],
        now: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<SlowInstance>> {
        if rules.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = sqlx::QueryBuilder::<Db>::new(SLOW_NODES);
        sql.push_bind(now.timestamp_millis());
        // Every rule for one workflow or another: only their instances are read at all.
        let scoped: Option<Vec<Uuid>> = rules.iter().map(|(_, workflow)| *workflow).collect();
        if let Some(workflows) = scoped {
            sql.push(" AND i.workflow_id IN (");
            push_binds(&mut sql, workflows.iter().copied());
            sql.push(")");
        }
        sql.push(" AND EXISTS (SELECT 1 FROM alert_rules r WHERE r.id IN (");
        push_binds(&mut sql, rules.iter().map(|(id, _)| *id));
        sql.push(concatcp!(
            ") AND (r.workflow_id IS NULL OR r.workflow_id = i.workflow_id) AND NOT EXISTS (SELECT 1 FROM \
                alert_deliveries d WHERE d.rule_id = r.id AND d.source_key = ",
            SLOW_KEY,
            ")) ORDER BY i.id, n.node_id LIMIT "
        ));
        sql.push_bind(limit);
        Ok(sql.build_query_as().keep_built().fetch_all(self.pool()).await?)
    }

    async fn alerted_instance(&self, id: Uuid) -> Result<Option<AlertedInstance>> {
        Ok(sqlx::query_as(ALERTED_INSTANCE).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn release_alert_leases(&self, owner: &str) -> Result<u64> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query(RELEASE_LEASES).bind(owner).execute(self.pool()).await?.rows_affected())
    }

    async fn sweep_alert_deliveries(&self, before: DateTime<Utc>, now: DateTime<Utc>, limit: i64) -> Result<u64> {
        let _guard = self.write_guard().await;
        let swept = sqlx::query(SWEEP_DELIVERIES)
            .bind(before)
            .bind(now.timestamp_millis())
            .bind(limit)
            .execute(self.pool())
            .await?;
        Ok(swept.rows_affected())
    }

    async fn mark_over(&self, rule: Uuid, now: DateTime<Utc>) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(MARK_OVER).bind(rule).bind(now).execute(self.pool()).await?;
        Ok(())
    }

    async fn clear_over(&self, rule: Uuid) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(CLEAR_OVER).bind(rule).execute(self.pool()).await?;
        Ok(())
    }
}
