//! `secrets.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::secrets::{
    SecretChange, SecretInfo, SecretRow, WorkflowTexts, COUNT_SECRETS, DELETE_SECRET, INSERT_SECRET, LIST_SECRETS,
    MASTER_KEY_CHECK, REPLACE_CHECK, REWRAP_SECRET, SEALED_SECRET, SECRET_INFO, UPDATE_SECRET, WORKFLOW_TEXTS,
    WRAPPED_KEYS,
};
use crate::store::Result;

#[async_trait::async_trait]
impl crate::store::SecretStore for Store {
    async fn insert_secret(&self, row: &SecretRow) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(INSERT_SECRET)
            .bind(&row.name)
            .bind(&row.description)
            .bind(&row.ciphertext)
            .bind(&row.wrapped_key)
            .bind(row.created_at)
            .bind(row.updated_at)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn list_secrets(&self) -> Result<Vec<SecretInfo>> {
        Ok(sqlx::query_as(LIST_SECRETS).fetch_all(self.pool()).await?)
    }

    async fn secret_info(&self, name: &str) -> Result<Option<SecretInfo>> {
        Ok(sqlx::query_as(SECRET_INFO).bind(name).fetch_optional(self.pool()).await?)
    }

    async fn sealed_secret(&self, name: &str) -> Result<Option<SecretRow>> {
        Ok(sqlx::query_as(SEALED_SECRET).bind(name).fetch_optional(self.pool()).await?)
    }

    async fn update_secret(&self, name: &str, change: &SecretChange) -> Result<bool> {
        let _guard = self.write_guard().await;
        let (ciphertext, wrapped_key) = change.sealed.clone().unzip();
        let description = change.description.as_deref().map(|d| Some(d).filter(|d| !d.is_empty()));
        let done = sqlx::query(UPDATE_SECRET)
            .bind(ciphertext)
            .bind(wrapped_key)
            .bind(description.is_some())
            .bind(description.flatten())
            .bind(change.now)
            .bind(name)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn delete_secret(&self, name: &str) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(DELETE_SECRET).bind(name).execute(self.pool()).await?;
        Ok(done.rows_affected() == 1)
    }

    async fn wrapped_keys(&self) -> Result<Vec<(String, Vec<u8>)>> {
        Ok(sqlx::query_as(WRAPPED_KEYS).fetch_all(self.pool()).await?)
    }

    async fn rewrap_secrets(&self, rewrapped: &[(String, Vec<u8>)], expected_check: &str, check: &str) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let replaced = sqlx::query(REPLACE_CHECK)
            .bind(check)
            .bind(MASTER_KEY_CHECK)
            .bind(expected_check)
            .execute(&mut *tx)
            .await?;
        let (count,): (i64,) = sqlx::query_as(COUNT_SECRETS).fetch_one(&mut *tx).await?;
        if replaced.rows_affected() != 1 || usize::try_from(count).ok() != Some(rewrapped.len()) {
            tx.rollback().await?;
            return Ok(false);
        }
        for (name, wrapped_key) in rewrapped {
            let done = sqlx::query(REWRAP_SECRET).bind(wrapped_key).bind(name).execute(&mut *tx).await?;
            if done.rows_affected() != 1 {
                tx.rollback().await?;
                return Ok(false);
            }
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn workflow_texts(&self) -> Result<Vec<WorkflowTexts>> {
        Ok(sqlx::query_as(WORKFLOW_TEXTS).fetch_all(self.pool()).await?)
    }
}
