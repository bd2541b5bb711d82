//! `debounces.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::debounces::{
    due_at, DebounceRow, Debounced, NewDebounce, CLAIM_DUE, FORGET, GATHERING, JOIN_BURST, NEXT_DUE, OPEN_BURST,
    PENDING,
};
use crate::store::phases::PHASES;
use crate::store::{retry_transient, Result};
use chrono::{DateTime, SubsecRound, Utc};
use sqlx::types::Json;
use uuid::Uuid;

impl Store {
    async fn debounce_once(&self, start: &NewDebounce) -> Result<std::result::Result<Debounced, DateTime<Utc>>> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        // The workflow's lock: two starts of one key never both open a burst.
        Self::lock_workflow(&mut tx, start.workflow_id).await?;
        if let Some(rate) = &start.rate {
            if let Some(retry_at) = Self::rate_refusal(&mut tx, start.workflow_id, rate).await? {
                return Ok(Err(retry_at));
            }
            Self::mark_rate(&mut tx, start.workflow_id, rate).await?;
        }
        let now = Utc::now().trunc_subsecs(6);
        let gathering: Option<(Uuid, DateTime<Utc>)> =
            sqlx::query_as(GATHERING).bind(start.workflow_id).bind(&start.key).fetch_optional(&mut *tx).await?;
        PHASES.statement();
        let joined = match gathering {
            Some((instance_id, first)) => {
                let due = due_at(first, now, start.period_ms, start.max_wait_ms);
                let joined = sqlx::query(JOIN_BURST)
                    .bind(instance_id)
                    .bind(Json(&start.input))
                    .bind(now)
                    .bind(due)
                    .bind(&start.started_by)
                    .execute(&mut *tx)
                    .await?;
                PHASES.statement();
                (joined.rows_affected() == 1).then_some(Debounced { instance_id, due_at: due, joined: true })
            }
            None => None,
        };
        let debounced = match joined {
            Some(joined) => joined,
            None => {
                let due = due_at(now, now, start.period_ms, start.max_wait_ms);
                sqlx::query(OPEN_BURST)
                    .bind(start.instance_id)
                    .bind(start.workflow_id)
                    .bind(&start.key)
                    .bind(Json(&start.input))
                    .bind(now)
                    .bind(due)
                    .bind(&start.started_by)
                    .execute(&mut *tx)
                    .await?;
                Debounced { instance_id: start.instance_id, due_at: due, joined: false }
            }
        };
        PHASES.statement();
        tx.commit().await?;
        Ok(Ok(debounced))
    }
}

#[async_trait::async_trait]
impl crate::store::DebounceStore for Store {
    async fn debounce(&self, start: &NewDebounce) -> Result<std::result::Result<Debounced, DateTime<Utc>>> {
        retry_transient(|| self.debounce_once(start)).await
    }

    async fn claim_due_debounces(&self, now: DateTime<Utc>, lease_until: DateTime<Utc>) -> Result<Vec<DebounceRow>> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query_as(CLAIM_DUE).bind(now).bind(lease_until).fetch_all(self.pool()).await?)
    }

    async fn finish_debounce(&self, instance_id: Uuid) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(FORGET).bind(instance_id).execute(self.pool()).await?;
        Ok(())
    }

    async fn pending_debounce(&self, instance_id: Uuid) -> Result<Option<DebounceRow>> {
        Ok(sqlx::query_as(PENDING).bind(instance_id).fetch_optional(self.pool()).await?)
    }

    async fn next_debounce_due(&self) -> Result<Option<DateTime<Utc>>> {
        let (due,): (Option<DateTime<Utc>>,) = sqlx::query_as(NEXT_DUE).fetch_one(self.pool()).await?;
        Ok(due)
    }
}
