//! Alerts (`crate::alerts`): rules, deliveries and their attempts; the trait and SQL text
//! here, the bodies in `queries/alerts.rs`.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use uuid::Uuid;

/// A rule as stored, secret included (only the sender and the create answer use it).
#[derive(Clone, sqlx::FromRow)]
pub struct AlertRuleRow {
    pub id: Uuid,
    pub name: String,
    pub event: trellis_model::api::AlertWhen,
    pub workflow_id: Option<Uuid>,
    pub url: String,
    pub secret: String,
    pub threshold: Option<i64>,
    pub for_ms: Option<i64>,
    pub dedupe_ms: Option<i64>,
    pub over_since: Option<DateTime<Utc>>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// The creator's user (or API key) id; none for rules made before owners were kept.
    pub owner_id: Option<String>,
}

/// An alert to record for a rule: once per (rule, `source_key`).
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub id: Uuid,
    pub rule_id: Uuid,
    pub event: trellis_model::AlertEvent,
    pub source_key: String,
    /// The failure group (workflow, node, error class) the dedupe window is kept per.
    pub group_key: Option<String>,
    pub instance_id: Option<Uuid>,
    /// The JSON to post.
    pub body: String,
    pub now: DateTime<Utc>,
    /// Deliveries of the same group created after this suppress this one (the rule's window).
    pub dedupe_since: Option<DateTime<Utc>>,
    /// Already sent (a test): whether it was delivered, and the attempt; never claimed.
    pub sent: Option<(bool, AlertAttemptRow)>,
}

/// A delivery in the log, with how many later ones it suppressed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AlertDeliveryRow {
    pub id: Uuid,
    pub event: trellis_model::AlertEvent,
    pub instance_id: Option<Uuid>,
    pub status: trellis_model::AlertDeliveryStatus,
    pub created_at: DateTime<Utc>,
    pub suppressed: i64,
}

/// A running instance with a node past its slow threshold that a `slow` rule has not alerted
/// on yet for this run: what the alert names, and nothing more (no input or output).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SlowInstance {
    pub id: Uuid,
    pub workflow_id: Uuid,
    pub version: i64,
    pub run: i32,
    pub workflow_name: String,
    /// The first node (by id) past its threshold, and the threshold.
    pub node_id: String,
    pub threshold_ms: i64,
}

/// The instance row fields an end's alert needs.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct AlertedInstance {
    pub id: Uuid,
    pub workflow_id: Uuid,
    pub version: i64,
    pub run: i32,
}

/// A pending delivery claimed for sending, with where and how to sign it.
#[derive(Clone, sqlx::FromRow)]
pub struct DueAlert {
    pub id: Uuid,
    pub rule_id: Uuid,
    pub body: String,
    pub attempts: i32,
    pub url: String,
    pub secret: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AlertAttemptRow {
    pub delivery_id: Uuid,
    pub attempt: i32,
    pub at: DateTime<Utc>,
    pub status_code: Option<i32>,
    pub error: Option<String>,
}

/// What comes after an attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AfterAttempt {
    Delivered,
    RetryAt(DateTime<Utc>),
    GaveUp,
}

#[async_trait]
pub trait AlertStore: Send + Sync + 'static {
    async fn insert_alert_rule(&self, rule: &AlertRuleRow) -> Result<()>;
    async fn alert_rules(&self) -> Result<Vec<AlertRuleRow>>;
    async fn alert_rule(&self, id: Uuid) -> Result<Option<AlertRuleRow>>;
    /// `false` if there is no such rule. Its deliveries go with it.
    async fn delete_alert_rule(&self, id: Uuid) -> Result<bool>;
    /// The rules on `event` for `workflow` (or, with `None`, for every workflow's rules only
    /// when asked about all: `event` rules of any scope).
    async fn alert_rules_on(&self, event: &str, workflow: Option<Uuid>) -> Result<Vec<AlertRuleRow>>;
    /// Records an alert once: `false` if the rule has it already. Within the dedupe window of
    /// a delivery of the same group it is recorded `suppressed`, counted on that one.
    async fn record_delivery(&self, new: &NewDelivery) -> Result<bool>;
    /// Leases up to `limit` pending deliveries due at `now` to `owner` until `until`.
    async fn claim_deliveries(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<DueAlert>>;
    /// Logs an attempt and moves the delivery on, if `owner` still holds its lease.
    async fn finish_attempt(&self, attempt: &AlertAttemptRow, owner: &str, after: AfterAttempt) -> Result<bool>;
    /// The rule's latest deliveries, newest first, and their attempts.
    async fn deliveries_of(&self, rule: Uuid, limit: i64) -> Result<(Vec<AlertDeliveryRow>, Vec<AlertAttemptRow>)>;
    /// Running instances with a node past its threshold at `now` that some of `rules` (id,
    /// workflow scope) has no `slow:{instance}:{run}` delivery for yet, oldest first, at most
    /// `limit` rows (one per slow node; an instance's rows are adjacent).
    async fn slow_unalerted(
        &self,
        rules: &[(Uuid, Option<Uuid>)],
        now: DateTime<Utc>,
        limit: i64,
    ) -> Result<Vec<SlowInstance>>;
    /// The fields of instance `id` an end's alert names, if it still exists.
    async fn alerted_instance(&self, id: Uuid) -> Result<Option<AlertedInstance>>;
    /// Gives back the leases `owner` holds on pending deliveries (a process stopping), so
    /// another process sends them at once instead of after the lease; returns how many.
    async fn release_alert_leases(&self, owner: &str) -> Result<u64>;
    /// Deletes up to `limit` finished (not pending) deliveries created before `before`, with
    /// their attempts, except any that may still suppress a later failure of its group (a
    /// rule's `dedupe_ms` reaching past `now`); returns how many.
    async fn sweep_alert_deliveries(&self, before: DateTime<Utc>, now: DateTime<Utc>, limit: i64) -> Result<u64>;
    /// A `queue_depth` rule's queue went over its threshold at `now` (if it was not already).
    async fn mark_over(&self, rule: Uuid, now: DateTime<Utc>) -> Result<()>;
    /// ... or is no longer over it.
    async fn clear_over(&self, rule: Uuid) -> Result<()>;
}

const RULE_COLUMNS: &str = "id, name, event, workflow_id, url, secret, threshold, for_ms, dedupe_ms, over_since, \
    created_by, created_at, owner_id";
pub(super) const INSERT_RULE: &str = concatcp!(
    "INSERT INTO alert_rules (",
    RULE_COLUMNS,
    ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
);
pub(super) const RULES: &str = concatcp!("SELECT ", RULE_COLUMNS, " FROM alert_rules ORDER BY created_at, id");
pub(super) const RULE: &str = concatcp!("SELECT ", RULE_COLUMNS, " FROM alert_rules WHERE id = $1");
pub(super) const RULES_ON_WORKFLOW: &str = concatcp!(
    "SELECT ",
    RULE_COLUMNS,
    " FROM alert_rules WHERE event = $1 AND (workflow_id IS NULL OR workflow_id = $2)"
);
pub(super) const RULES_ON: &str = concatcp!("SELECT ", RULE_COLUMNS, " FROM alert_rules WHERE event = $1");
/// Where each of a batch of claimed deliveries goes and its signing secret; the ids follow.
pub(super) const RULE_ADDRESSES_OF: &str = "SELECT id, url, secret FROM alert_rules WHERE id IN (";
pub(super) const DELETE_RULE: &str = "DELETE FROM alert_rules WHERE id = $1";
pub(super) const ALERTED_INSTANCE: &str = "SELECT id, workflow_id, version, run FROM instances WHERE id = $1";
pub(super) const RELEASE_LEASES: &str = "UPDATE alert_deliveries SET lease_owner = NULL, lease_until = NULL \
    WHERE lease_owner = $1 AND status = 'pending'";
pub(super) const HAS_DELIVERY: &str = "SELECT id FROM alert_deliveries WHERE rule_id = $1 AND source_key = $2";
/// The group's delivery (not itself suppressed) within the window, if any.
pub(super) const GROUP_LEADER: &str = "SELECT id FROM alert_deliveries WHERE rule_id = $1 AND group_key = $2 \
    AND created_at >= $3 AND status <> 'suppressed' ORDER BY created_at LIMIT 1";
pub(super) const INSERT_DELIVERY: &str = "INSERT INTO alert_deliveries (id, rule_id, event, source_key, group_key, \
    instance_id, body, status, suppressed_by, attempts, next_attempt_at, created_at) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (rule_id, source_key) DO NOTHING";
pub(super) const INSERT_ATTEMPT: &str =
    "INSERT INTO alert_attempts (delivery_id, attempt, at, status_code, error) VALUES ($1, $2, $3, $4, $5) \
    ON CONFLICT (delivery_id, attempt) DO NOTHING";
pub(super) const FINISH_DELIVERY: &str = "UPDATE alert_deliveries SET status = $3, attempts = $4, \
    next_attempt_at = $5, lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2";
pub(super) const DELIVERIES_OF: &str = "SELECT d.id, d.event, d.instance_id, d.status, d.created_at, \
    (SELECT COUNT(*) FROM alert_deliveries s WHERE s.suppressed_by = d.id) AS suppressed \
    FROM alert_deliveries d WHERE d.rule_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2";
pub(super) const ATTEMPTS_OF_RULE: &str = "SELECT a.delivery_id, a.attempt, a.at, a.status_code, a.error \
    FROM alert_attempts a JOIN alert_deliveries d ON d.id = a.delivery_id WHERE d.rule_id = $1 \
    AND d.created_at >= $2 ORDER BY a.delivery_id, a.attempt";
pub(super) const MARK_OVER: &str = "UPDATE alert_rules SET over_since = $2 WHERE id = $1 AND over_since IS NULL";
pub(super) const CLEAR_OVER: &str = "UPDATE alert_rules SET over_since = NULL WHERE id = $1 AND over_since IS NOT NULL";
