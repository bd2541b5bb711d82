//! What broker triggers keep beside the trigger rows (the SQL body in `queries/brokers.rs`):
//! each trigger's consumer report (`broker_consumers`: its state, why, the broker's lag), and
//! the counts a consumer's back-pressure reads.

use super::triggers::TRIGGER_COLUMNS;
use super::{Result, TriggerRow};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use uuid::Uuid;

/// A consumer's last report on its trigger.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ConsumerRow {
    pub trigger_id: Uuid,
    pub state: String,
    pub reason: Option<String>,
    pub lag: Option<i64>,
    /// When `state` last changed.
    pub since: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl ConsumerRow {
    /// A report made now.
    pub fn now(trigger_id: Uuid, state: &str, reason: Option<String>, lag: Option<i64>) -> ConsumerRow {
        let now = Utc::now();
        ConsumerRow { trigger_id, state: state.to_owned(), reason, lag, since: now, updated_at: now }
    }
}

#[async_trait]
pub trait BrokerStore: Send + Sync + 'static {
    /// Every `nats`, `amqp` and `mqtt` trigger, paused ones included.
    async fn list_broker_triggers(&self) -> Result<Vec<TriggerRow>>;
    /// Records what a consumer of `report.trigger_id` does now; `since` moves only when the
    /// state changes, and a `lag` of `None` keeps the last one known. A trigger deleted
    /// meanwhile records nothing.
    async fn report_consumer(&self, report: &ConsumerRow) -> Result<()>;
    /// Every trigger's last report.
    async fn consumer_reports(&self) -> Result<Vec<ConsumerRow>>;
    /// Logs a batch of messages' deliveries (a statement per 200).
    async fn insert_deliveries(&self, rows: &[super::DeliveryRow]) -> Result<()>;
    /// How many of `workflow`'s instances wait in its queue.
    async fn queued_instances(&self, workflow: Uuid) -> Result<i64>;
}

pub(super) const LIST_BROKER_TRIGGERS: &str =
    concatcp!("SELECT ", TRIGGER_COLUMNS, " FROM triggers WHERE kind IN ('nats', 'amqp', 'mqtt') ORDER BY id");
pub(super) const REPORT_CONSUMER: &str =
    "INSERT INTO broker_consumers (trigger_id, state, reason, lag, since, updated_at) SELECT $1, $2, $3, $4, \
     $5, $5 WHERE EXISTS (SELECT 1 FROM triggers WHERE id = $1) ON CONFLICT (trigger_id) DO UPDATE SET since = \
     CASE WHEN broker_consumers.state = excluded.state THEN broker_consumers.since ELSE excluded.since END, \
     state = excluded.state, reason = excluded.reason, lag = COALESCE(excluded.lag, broker_consumers.lag), \
     updated_at = excluded.updated_at";
pub(super) const CONSUMER_REPORTS: &str =
    "SELECT trigger_id, state, reason, lag, since, updated_at FROM broker_consumers";
pub(super) const QUEUED_INSTANCES: &str = "SELECT COUNT(*) FROM instances WHERE workflow_id = $1 AND status = 'queued'";
