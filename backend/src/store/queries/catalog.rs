//! `catalog.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::KeepBuilt;
use super::{push_binds, Store};
use crate::store::backend::Backend;
use crate::store::catalog::like_pattern;
use crate::store::catalog::{
    API_KEY_BY_HASH, BUMP_LATEST_VERSION, COUNT_USERS, CREATE_WORKFLOW, DELETE_SESSIONS_OF_USERNAME, GET_VERSION,
    GET_WORKFLOW, INSERT_API_KEY, INSERT_SETTING_IF_ABSENT, INSERT_USER, INSERT_VERSION_FROM_DRAFT, LIST_API_KEYS,
    LIST_VERSIONS, LIST_WORKFLOWS, PING, REVOKE_API_KEY, SAVE_DRAFT, SETTING, SET_PASSWORD, UPDATE_WORKFLOW,
    USER_BY_ID, USER_BY_NAME, WORKFLOW_ARCHIVED, WORKFLOW_NAMES_OF,
};
use crate::store::records::{
    ApiKeyRecord, NewUser, NewVersion, NewWorkflow, UserRecord, VersionInfo, VersionRecord, WorkflowChange,
    WorkflowQuery, WorkflowRecord, WriteOutcome,
};
use crate::store::{Result, StoreError};
use chrono::Utc;
use sqlx::types::Json;
use trellis_model::Definition;
use uuid::Uuid;
type Db = <Store as Backend>::Db;

#[async_trait::async_trait]
impl crate::store::Store for Store {
    fn backend(&self) -> &'static str {
        Self::NAME
    }

    async fn ping(&self) -> Result<()> {
        sqlx::query(PING).execute(self.pool()).await?;
        Ok(())
    }

    async fn setting_or_init(&self, key: &str, value: &str) -> Result<String> {
        let _guard = self.write_guard().await;
        sqlx::query(INSERT_SETTING_IF_ABSENT).bind(key).bind(value).execute(self.pool()).await?;
        let (stored,): (String,) = sqlx::query_as(SETTING).bind(key).fetch_one(self.pool()).await?;
        Ok(stored)
    }

    async fn count_users(&self) -> Result<i64> {
        let (n,): (i64,) = sqlx::query_as(COUNT_USERS).fetch_one(self.pool()).await?;
        Ok(n)
    }

    async fn insert_user(&self, user: &NewUser) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(INSERT_USER)
            .bind(user.id)
            .bind(&user.username)
            .bind(&user.password_hash)
            .bind(user.role.as_str())
            .bind(user.created_at)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn user_by_name(&self, username: &str) -> Result<Option<UserRecord>> {
        Ok(sqlx::query_as(USER_BY_NAME).bind(username).fetch_optional(self.pool()).await?)
    }

    async fn user_by_id(&self, id: Uuid) -> Result<Option<UserRecord>> {
        Ok(sqlx::query_as(USER_BY_ID).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn set_password(&self, username: &str, hash: &str) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let done = sqlx::query(SET_PASSWORD).bind(hash).bind(Utc::now()).bind(username).execute(&mut *tx).await?;
        // A new password ends the sessions signed in with the old one.
        sqlx::query(DELETE_SESSIONS_OF_USERNAME).bind(username).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    async fn insert_api_key(&self, key: &ApiKeyRecord) -> Result<()> {
        let _guard = self.write_guard().await;
        sqlx::query(INSERT_API_KEY)
            .bind(key.id)
            .bind(&key.name)
            .bind(&key.prefix)
            .bind(&key.key_hash)
            .bind(key.role)
            .bind(&key.created_by)
            .bind(key.created_at)
            .execute(self.pool())
            .await
            .map_err(StoreError::from_sqlx)?;
        Ok(())
    }

    async fn api_key_by_hash(&self, key_hash: &str) -> Result<Option<ApiKeyRecord>> {
        Ok(sqlx::query_as(API_KEY_BY_HASH).bind(key_hash).fetch_optional(self.pool()).await?)
    }

    async fn list_api_keys(&self) -> Result<Vec<ApiKeyRecord>> {
        Ok(sqlx::query_as(LIST_API_KEYS).fetch_all(self.pool()).await?)
    }

    async fn revoke_api_key(&self, id: Uuid) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let done = sqlx::query(REVOKE_API_KEY).bind(Utc::now()).bind(id).execute(&mut *tx).await?;
        let private_views = crate::store::accounts::DELETE_PRIVATE_VIEWS;
        sqlx::query(private_views).bind(id.to_string()).bind(false).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

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
