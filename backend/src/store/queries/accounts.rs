//! `accounts.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::accounts::{
    ApiKeyRecord, NewUser, UserRecord, API_KEY_BY_HASH, COUNT_ENABLED_ADMINS, COUNT_USERS, DELETE_EXPIRED_SESSIONS,
    DELETE_PRIVATE_VIEWS, DELETE_SESSION, DELETE_SESSIONS_OF_USERNAME, DELETE_USER, DELETE_USER_SESSIONS,
    INSERT_API_KEY, INSERT_SESSION, INSERT_USER, LIST_API_KEYS, LIST_USERS, REVOKE_API_KEY, SESSION_ID_TOKEN,
    SESSION_USER, SET_PASSWORD, SET_ROLE, SET_USER_DISABLED, USER_BY_ID, USER_BY_NAME,
};
use crate::store::backend::Backend;
use crate::store::{Result, StoreError};
use chrono::{DateTime, Utc};
use uuid::Uuid;

#[async_trait::async_trait]
impl crate::store::AccountStore for Store {
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
        sqlx::query(DELETE_PRIVATE_VIEWS).bind(id.to_string()).bind(false).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    async fn insert_session(&self, s: &crate::store::NewSession<'_>) -> Result<()> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        sqlx::query(DELETE_EXPIRED_SESSIONS).bind(s.now).execute(&mut *tx).await?;
        sqlx::query(INSERT_SESSION)
            .bind(s.id)
            .bind(s.user)
            .bind(s.now)
            .bind(s.expires_at)
            .bind(s.id_token)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn session_id_token(&self, id: Uuid) -> Result<Option<String>> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as(SESSION_ID_TOKEN).bind(id).fetch_optional(self.pool()).await?;
        Ok(row.and_then(|(token,)| token))
    }

    async fn session_user(&self, id: Uuid, now: DateTime<Utc>) -> Result<Option<crate::store::SessionUser>> {
        Ok(sqlx::query_as(SESSION_USER).bind(id).bind(now).fetch_optional(self.pool()).await?)
    }

    async fn delete_session(&self, id: Uuid) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(DELETE_SESSION).bind(id).execute(self.pool()).await?;
        Ok(done.rows_affected() == 1)
    }

    async fn set_role(&self, user: Uuid, role: trellis_model::Role) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(SET_ROLE).bind(role).bind(Utc::now()).bind(user).execute(self.pool()).await?;
        Ok(done.rows_affected() == 1)
    }

    async fn delete_user(&self, user: Uuid) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let done = sqlx::query(DELETE_USER).bind(user).execute(&mut *tx).await?;
        sqlx::query(DELETE_PRIVATE_VIEWS).bind(user.to_string()).bind(false).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    async fn list_users(&self) -> Result<Vec<UserRecord>> {
        Ok(sqlx::query_as(LIST_USERS).fetch_all(self.pool()).await?)
    }

    async fn set_disabled(&self, user: Uuid, at: Option<DateTime<Utc>>) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let done = sqlx::query(SET_USER_DISABLED).bind(at).bind(Utc::now()).bind(user).execute(&mut *tx).await?;
        if at.is_some() {
            sqlx::query(DELETE_USER_SESSIONS).bind(user).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    async fn count_enabled_admins(&self) -> Result<i64> {
        let (n,): (i64,) = sqlx::query_as(COUNT_ENABLED_ADMINS).fetch_one(self.pool()).await?;
        Ok(n)
    }
}
