//! `views.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::views::{ViewRow, DELETE_VIEW, INSERT_VIEW, LIST_VIEWS, VIEW};
use crate::store::Result;
use uuid::Uuid;

#[async_trait::async_trait]
impl crate::store::ViewStore for Store {
    async fn insert_view(&self, row: &ViewRow) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(INSERT_VIEW)
            .bind(row.id)
            .bind(&row.owner_id)
            .bind(&row.owner_name)
            .bind(&row.name)
            .bind(&row.path)
            .bind(row.shared)
            .bind(row.created_at)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn list_views(&self, owner: &str) -> Result<Vec<ViewRow>> {
        Ok(sqlx::query_as(LIST_VIEWS).bind(owner).bind(true).fetch_all(self.pool()).await?)
    }

    async fn view(&self, id: Uuid) -> Result<Option<ViewRow>> {
        Ok(sqlx::query_as(VIEW).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn delete_view(&self, id: Uuid) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(DELETE_VIEW).bind(id).execute(self.pool()).await?;
        Ok(done.rows_affected() == 1)
    }
}
