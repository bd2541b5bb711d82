//! `accounts.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::accounts::{
    COUNT_ENABLED_ADMINS, DELETE_EXPIRED_SESSIONS, DELETE_PRIVATE_VIEWS, DELETE_SESSION, DELETE_USER,
    DELETE_USER_SESSIONS, INSERT_SESSION, LIST_USERS, SESSION_ID_TOKEN, SESSION_USER, SET_ROLE, SET_USER_DISABLED,
};
use crate::store::backend::Backend;
use crate::store::Result;
use chrono::{DateTime, Utc};
use uuid::Uuid;

#[async_trait::async_trait]
impl crate::store::AccountStore for Store {
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

    async fn list_users(&self) -> Result<Vec<crate::store::UserRecord>> {
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
