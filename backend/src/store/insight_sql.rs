//! Reads over the stored instances for the dashboard and failure triage, shared by both
//! backends like `sql.rs` and stamped onto each store by `impl_insight_store!`. They group in
//! the database: at 100,000 failed instances only the groups cross the wire.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Which failures to group: those that ended in `[since, until)`, of one workflow or all.
#[derive(Debug, Clone)]
pub struct FailureQuery {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub workflow: Option<Uuid>,
    pub limit: i64,
}

/// Failed or timed-out instances of one workflow, failing node and error class.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct FailureGroupRow {
    pub workflow_id: Uuid,
    pub failed_node: Option<String>,
    /// The stored class; an instance that failed before classes were stored has its error here.
    pub error_class: Option<String>,
    pub count: i64,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// The newest instance of the group (ids are time-ordered).
    pub sample_instance: Uuid,
    pub sample_error: Option<String>,
}

#[async_trait]
pub trait InsightStore: Send + Sync + 'static {
    /// The largest groups first, at most `limit`; and how many failures there are in all.
    async fn failure_groups(&self, query: &FailureQuery) -> Result<(Vec<FailureGroupRow>, i64)>;
}

macro_rules! impl_insight_store {
    ($store:ty) => {
        const _: () = {
            use $crate::store::backend::Backend;
            use $crate::store::insight_sql::{FailureGroupRow, FailureQuery};
            use $crate::store::Result;
            type Db = <$store as Backend>::Db;
            const NEWEST_ID: &str = <$store as Backend>::NEWEST_ID;

            #[async_trait::async_trait]
            impl $crate::store::InsightStore for $store {
                async fn failure_groups(&self, q: &FailureQuery) -> Result<(Vec<FailureGroupRow>, i64)> {
                    let filter = "status IN ('failed', 'timed_out') AND ended_at >= $1 AND ended_at < $2 \
                                  AND ($3 IS NULL OR workflow_id = $3)";
                    let sql = format!(
                        "SELECT workflow_id, failed_node, COALESCE(error_class, error) AS error_class, COUNT(*) AS count, \
                         MIN(ended_at) AS first_seen, MAX(ended_at) AS last_seen, {NEWEST_ID} AS sample_instance, \
                         MAX(error) AS sample_error FROM instances WHERE {filter} \
                         GROUP BY workflow_id, failed_node, COALESCE(error_class, error) \
                         ORDER BY count DESC, last_seen DESC LIMIT $4"
                    );
                    let groups = sqlx::query_as::<Db, FailureGroupRow>(&sql)
                        .bind(q.since).bind(q.until).bind(q.workflow).bind(q.limit)
                        .fetch_all(self.pool()).await?;
                    let (total,): (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) FROM instances WHERE {filter}"))
                        .bind(q.since).bind(q.until).bind(q.workflow)
                        .fetch_one(self.pool()).await?;
                    Ok((groups, total))
                }
            }
        };
    };
}

pub(super) use impl_insight_store;
