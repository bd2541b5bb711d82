//! `catalog.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::KeepBuilt;
use super::{push_binds, Store};
use crate::store::backend::Backend;
use crate::store::catalog::{
    like_pattern, NewVersion, NewWorkflow, VersionInfo, VersionRecord, WorkflowChange, WorkflowQuery, WorkflowRecord,
    WriteOutcome, BUMP_LATEST_VERSION, CREATE_WORKFLOW, GET_VERSION, GET_WORKFLOW, INSERT_VERSION_FROM_DRAFT,
    LIST_VERSIONS, LIST_WORKFLOWS, SAVE_DRAFT, UPDATE_WORKFLOW, WORKFLOW_ARCHIVED, WORKFLOW_NAMES_OF,
};
use crate::store::{Result, StoreError};
use chrono::Utc;
use sqlx::types::Json;
use trellis_model::Definition;
use uuid::Uuid;
type Db = <Store as Backend>::Db;

#[async_trait::async_trait]
impl crate::store::CatalogStore for Store {
    async fn create_workflow(&self, new: &NewWorkflow) -> Result<WorkflowRecord> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query_as(CREATE_WORKFLOW)
            .bind(new.id)
            .bind(&new.name)
            .bind(&new.description)
            .bind(Json(&new.draft))
            .bind(false)
            .bind(new.now)
            .fetch_one(self.pool())
            .await
            .map_err(StoreError::from_sqlx)?)
    }

    async fn list_workflows(&self, q: &WorkflowQuery) -> Result<Vec<WorkflowRecord>> {
        Ok(sqlx::query_as(LIST_WORKFLOWS)
            .bind(q.include_archived)
            .bind(false)
            .bind(q.before)
            .bind(q.name_contains.as_deref().map(like_pattern))
            .bind(q.limit)
            .fetch_all(self.pool())
            .await?)
    }

    async fn get_workflow(&self, id: Uuid) -> Result<Option<WorkflowRecord>> {
        Ok(sqlx::query_as(GET_WORKFLOW).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn workflow_names(&self, ids: &[Uuid]) -> Result<Vec<(Uuid, String)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = sqlx::QueryBuilder::<Db>::new(WORKFLOW_NAMES_OF);
        push_binds(&mut sql, ids.iter().copied());
        sql.push(")");
        Ok(sql.build_query_as().keep_built().fetch_all(self.pool()).await?)
    }

    async fn update_workflow(&self, id: Uuid, change: &WorkflowChange) -> Result<Option<WorkflowRecord>> {
        let _guard = self.write_guard().await;
        Ok(sqlx::query_as(UPDATE_WORKFLOW)
            .bind(&change.name)
            .bind(&change.description)
            .bind(change.archived)
            .bind(Utc::now())
            .bind(id)
            .fetch_optional(self.pool())
            .await?)
    }

    async fn save_draft(&self, id: Uuid, expected_rev: Option<i64>, draft: &Definition) -> Result<WriteOutcome<i64>> {
        let _guard = self.write_guard().await;
        // One compare-and-swap statement: of two saves holding the same revision,
        // exactly one matches the row.
        let saved: Option<(i64,)> = sqlx::query_as(SAVE_DRAFT)
            .bind(Json(draft))
            .bind(Utc::now())
            .bind(id)
            .bind(false)
            .bind(expected_rev)
            .fetch_optional(self.pool())
            .await?;
        match saved {
            Some((rev,)) => Ok(WriteOutcome::Done(rev)),
            None => self.why_not_written(id).await,
        }
    }

    async fn publish(&self, id: Uuid, draft_rev: i64, v: &NewVersion) -> Result<WriteOutcome<i64>> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        // Writing first takes the row (Postgres) or database (SQLite) write lock before
        // anything is read, so concurrent publishes queue instead of racing.
        let bumped: Option<(i64,)> = sqlx::query_as(BUMP_LATEST_VERSION)
            .bind(v.now)
            .bind(id)
            .bind(false)
            .bind(draft_rev)
            .fetch_optional(&mut *tx)
            .await?;
        let Some((version,)) = bumped else {
            drop(tx);
            return self.why_not_written(id).await;
        };
        sqlx::query(INSERT_VERSION_FROM_DRAFT)
            .bind(&v.note)
            .bind(&v.published_by)
            .bind(v.now)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::from_sqlx)?;
        for (node, ms) in &v.stuck_after {
            sqlx::query(crate::store::slow::PUT_STUCK_AFTER)
                .bind(id)
                .bind(version)
                .bind(node)
                .bind(ms)
                .bind(v.now)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(WriteOutcome::Done(version))
    }

    async fn list_versions(&self, workflow: Uuid) -> Result<Vec<VersionInfo>> {
        Ok(sqlx::query_as(LIST_VERSIONS).bind(workflow).fetch_all(self.pool()).await?)
    }

    async fn get_version(&self, workflow: Uuid, version: i64) -> Result<Option<VersionRecord>> {
        Ok(sqlx::query_as(GET_VERSION).bind(workflow).bind(version).fetch_optional(self.pool()).await?)
    }
}

impl Store {
    /// After a conditional write matched no row: was it missing, archived or stale?
    async fn why_not_written<T>(&self, id: Uuid) -> Result<WriteOutcome<T>> {
        let row: Option<(bool,)> = sqlx::query_as(WORKFLOW_ARCHIVED).bind(id).fetch_optional(self.pool()).await?;
        Ok(match row {
            None => WriteOutcome::NotFound,
            Some((true,)) => WriteOutcome::Archived,
            Some((false,)) => WriteOutcome::Stale,
        })
    }
}
