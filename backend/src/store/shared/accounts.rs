//! `account_sql.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::Result;
use chrono::{DateTime, Utc};
use uuid::Uuid;

#[async_trait::async_trait]
impl crate::store::AccountStore for Store {
    async fn insert_session(&self, id: Uuid, user: Uuid, now: DateTime<Utc>, expires_at: DateTime<Utc>) -> Result<()> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        sqlx::query("DELETE FROM sessions WHERE expires_at <= $1").bind(now).execute(&mut *tx).await?;
        sqlx::query("INSERT INTO sessions (id, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)")
            .bind(id)
            .bind(user)
            .bind(now)
            .bind(expires_at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn session_user(&self, id: Uuid, now: DateTime<Utc>) -> Result<Option<crate::store::SessionUser>> {
        Ok(sqlx::query_as(
            "SELECT u.id AS user_id, u.username, u.role FROM sessions s JOIN users u ON u.id = s.user_id \
             WHERE s.id = $1 AND s.expires_at > $2 AND u.disabled_at IS NULL",
        )
        .bind(id)
        .bind(now)
        .fetch_optional(self.pool())
        .await?)
    }

    async fn delete_session(&self, id: Uuid) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query("DELETE FROM sessions WHERE id = $1").bind(id).execute(self.pool()).await?;
        Ok(done.rows_affected() == 1)
    }

    async fn set_role(&self, user: Uuid, role: trellis_model::Role) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query("UPDATE users SET role = $1, updated_at = $2 WHERE id = $3")
            .bind(role)
            .bind(Utc::now())
            .bind(user)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn delete_user(&self, user: Uuid) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query("DELETE FROM users WHERE id = $1").bind(user).execute(self.pool()).await?;
        Ok(done.rows_affected() == 1)
    }

    async fn list_users(&self) -> Result<Vec<crate::store::UserRecord>> {
        Ok(sqlx::query_as(
            "SELECT id, username, password_hash, role, created_at, disabled_at FROM users ORDER BY username",
        )
        .fetch_all(self.pool())
        .await?)
    }

    async fn set_disabled(&self, user: Uuid, at: Option<DateTime<Utc>>) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let done = sqlx::query("UPDATE users SET disabled_at = $1, updated_at = $2 WHERE id = $3")
            .bind(at)
            .bind(Utc::now())
            .bind(user)
            .execute(&mut *tx)
            .await?;
        if at.is_some() {
            sqlx::query("DELETE FROM sessions WHERE user_id = $1").bind(user).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    async fn count_enabled_admins(&self) -> Result<i64> {
        let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users WHERE role = 'admin' AND disabled_at IS NULL")
            .fetch_one(self.pool())
            .await?;
        Ok(n)
    }
}
