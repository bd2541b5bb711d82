//! `insights.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::KeepBuilt;
use super::{push_binds, Store};
use crate::store::backend::Backend;
use crate::store::insights::ERRORS_OF;
use crate::store::insights::{nearest_rank, DurationRanks, FailureGroupRow, FailureQuery, StatsQuery};
use crate::store::statuses::TERMINAL;
use crate::store::Result;
use const_format::{concatcp, str_replace};
use trellis_model::InstanceStatus;
use uuid::Uuid;
type Db = <Store as Backend>::Db;
const NEWEST_ID: &str = <Store as Backend>::NEWEST_ID;
const EPOCH_OF: &str = <Store as Backend>::EPOCH_OF;
const FLOOR: &str = <Store as Backend>::FLOOR;
/// Instances of the range, by when they ended.
const ENDED_IN: &str = "ended_at >= $1 AND ended_at < $2 AND ($3 IS NULL OR workflow_id = $3)";
/// Failed instances of the range: the same status list as the partial index `instances_failures`,
/// so the groups are read from the index alone.
const FAILED_IN: &str = concatcp!("status IN ('failed', 'timed_out') AND ", ENDED_IN);
const FAILURE_GROUPS: &str = concatcp!(
    "SELECT workflow_id, failed_node, error_class, COUNT(*) AS count, MIN(ended_at) AS first_seen, \
    MAX(ended_at) AS last_seen, ",
    NEWEST_ID,
    " AS sample_instance, NULL AS sample_error FROM instances WHERE ",
    FAILED_IN,
    " GROUP BY workflow_id, failed_node, error_class ORDER BY count DESC, last_seen DESC LIMIT $4"
);
const COUNT_FAILED: &str = concatcp!("SELECT COUNT(*) FROM instances WHERE ", FAILED_IN);
const ENDED_EPOCH: &str = str_replace!(EPOCH_OF, "{}", "ended_at");
const STARTED_EPOCH: &str = str_replace!(EPOCH_OF, "{}", "started_at");
const FINISHED_PER_SLOT: &str = concatcp!(
    "SELECT CAST(",
    FLOOR,
    "((",
    ENDED_EPOCH,
    " - $4) / $5) AS BIGINT) AS slot, status, COUNT(*) FROM instances WHERE status IN ",
    TERMINAL,
    " AND ",
    ENDED_IN,
    " GROUP BY 1, 2"
);
/// Only the two ranked rows of each workflow leave the database.
const DURATION_RANKS: &str = concatcp!(
    "SELECT workflow_id, n, rank, ms FROM (SELECT workflow_id, ms, ROW_NUMBER() OVER (PARTITION BY \
    workflow_id ORDER BY ms) AS rank, COUNT(*) OVER (PARTITION BY workflow_id) AS n FROM (SELECT \
    workflow_id, CAST((",
    ENDED_EPOCH,
    " - ",
    STARTED_EPOCH,
    ") * 1000.0 AS DOUBLE PRECISION) AS ms FROM instances WHERE status = 'succeeded' AND started_at IS \
    NOT NULL AND ",
    ENDED_IN,
    ") d) r WHERE rank = (50 * n + 99) / 100 OR rank = (95 * n + 99) / 100"
);

#[async_trait::async_trait]
impl crate::store::InsightStore for Store {
    async fn failure_groups(&self, q: &FailureQuery) -> Result<(Vec<FailureGroupRow>, i64)> {
        let mut groups = sqlx::query_as::<Db, FailureGroupRow>(FAILURE_GROUPS)
            .bind(q.since)
            .bind(q.until)
            .bind(q.workflow)
            .bind(q.limit)
            .fetch_all(self.pool())
            .await?;
        // Each group's newest error as it was: one read by primary key for all of them.
        if !groups.is_empty() {
            let mut read = sqlx::QueryBuilder::<Db>::new(ERRORS_OF);
            push_binds(&mut read, groups.iter().map(|g| g.sample_instance));
            read.push(")");
            let errors: Vec<(Uuid, Option<String>)> = read.build_query_as().keep_built().fetch_all(self.pool()).await?;
            for g in &mut groups {
                g.sample_error = errors.iter().find(|(id, _)| *id == g.sample_instance).and_then(|(_, e)| e.clone());
            }
        }
        // Fewer groups than asked for: they are all of them, and so is their sum.
        let total = if (groups.len() as i64) < q.limit {
            groups.iter().map(|g| g.count).sum()
        } else {
            let (total,): (i64,) = sqlx::query_as(COUNT_FAILED)
                .bind(q.since)
                .bind(q.until)
                .bind(q.workflow)
                .fetch_one(self.pool())
                .await?;
            total
        };
        Ok((groups, total))
    }

    async fn finished_per_slot(&self, q: &StatsQuery) -> Result<Vec<(i64, InstanceStatus, i64)>> {
        let since = q.since.timestamp_millis() as f64 / 1000.0;
        Ok(sqlx::query_as::<Db, (i64, InstanceStatus, i64)>(FINISHED_PER_SLOT)
            .bind(q.since)
            .bind(q.until)
            .bind(q.workflow)
            .bind(since)
            .bind(q.slot_seconds as f64)
            .fetch_all(self.pool())
            .await?)
    }

    async fn duration_ranks(&self, q: &StatsQuery) -> Result<Vec<DurationRanks>> {
        let rows: Vec<(Uuid, i64, i64, f64)> =
            sqlx::query_as(DURATION_RANKS).bind(q.since).bind(q.until).bind(q.workflow).fetch_all(self.pool()).await?;
        let mut ranks: Vec<DurationRanks> = Vec::new();
        for (workflow_id, count, rank, ms) in rows {
            let at = match ranks.iter().position(|r| r.workflow_id == workflow_id) {
                Some(at) => at,
                None => {
                    ranks.push(DurationRanks { workflow_id, count, p50_ms: 0.0, p95_ms: 0.0 });
                    ranks.len() - 1
                }
            };
            if rank == nearest_rank(50, count) {
                ranks[at].p50_ms = ms;
            }
            if rank == nearest_rank(95, count) {
                ranks[at].p95_ms = ms;
            }
        }
        Ok(ranks)
    }
}
