//! `sso.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::Store;
use crate::store::backend::Backend;
use crate::store::sso::{
    OidcAttempt, OidcHandoff, SsoProfile, DELETE_EXPIRED_ATTEMPTS, DELETE_EXPIRED_HANDOFFS, DELETE_PASSWORD_SESSIONS,
    INSERT_ATTEMPT, INSERT_HANDOFF, INSERT_SSO_USER, NO_PASSWORD, RECORD_SSO_PROFILE, SET_GROUPS, TAKE_ATTEMPT,
    TAKE_HANDOFF, USER_BY_SUBJECT,
};
use crate::store::{NewUser, Result, UserRecord};
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;

#[async_trait::async_trait]
impl crate::store::SsoStore for Store {
    async fn insert_oidc_attempt(&self, attempt: &OidcAttempt, now: DateTime<Utc>) -> Result<()> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        sqlx::query(DELETE_EXPIRED_ATTEMPTS).bind(now).execute(&mut *tx).await?;
        sqlx::query(INSERT_ATTEMPT)
            .bind(&attempt.state)
            .bind(&attempt.nonce)
            .bind(&attempt.pkce_verifier)
            .bind(&attempt.return_to)
            .bind(attempt.expires_at)
            .bind(attempt.cli_port)
            .bind(&attempt.cli_challenge)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn take_oidc_attempt(&self, state: &str, now: DateTime<Utc>) -> Result<Option<OidcAttempt>> {
        let _guard = self.write_guard().await;
        let taken: Option<OidcAttempt> = sqlx::query_as(TAKE_ATTEMPT).bind(state).fetch_optional(self.pool()).await?;
        Ok(taken.filter(|a| a.expires_at > now))
    }

    async fn insert_oidc_handoff(&self, handoff: &OidcHandoff, now: DateTime<Utc>) -> Result<()> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        sqlx::query(DELETE_EXPIRED_HANDOFFS).bind(now).execute(&mut *tx).await?;
        sqlx::query(INSERT_HANDOFF)
            .bind(&handoff.code_hash)
            .bind(&handoff.challenge)
            .bind(handoff.user_id)
            .bind(&handoff.id_token)
            .bind(handoff.expires_at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn take_oidc_handoff(&self, code_hash: &str, now: DateTime<Utc>) -> Result<Option<OidcHandoff>> {
        let _guard = self.write_guard().await;
        let taken: Option<OidcHandoff> =
            sqlx::query_as(TAKE_HANDOFF).bind(code_hash).fetch_optional(self.pool()).await?;
        Ok(taken.filter(|h| h.expires_at > now))
    }

    async fn user_by_subject(&self, subject: &str) -> Result<Option<UserRecord>> {
        Ok(sqlx::query_as(USER_BY_SUBJECT).bind(subject).fetch_optional(self.pool()).await?)
    }

    async fn insert_sso_user(&self, user: &NewUser, profile: &SsoProfile<'_>) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(INSERT_SSO_USER)
            .bind(user.id)
            .bind(&user.username)
            .bind(NO_PASSWORD)
            .bind(profile.role.as_str())
            .bind(user.created_at)
            .bind(profile.subject)
            .bind(Json(profile.groups))
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn record_sso_profile(&self, user: Uuid, profile: &SsoProfile<'_>) -> Result<bool> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let done = sqlx::query(RECORD_SSO_PROFILE)
            .bind(profile.subject)
            .bind(profile.role.as_str())
            .bind(Json(profile.groups))
            .bind(NO_PASSWORD)
            .bind(Utc::now())
            .bind(user)
            .execute(&mut *tx)
            .await?;
        sqlx::query(DELETE_PASSWORD_SESSIONS).bind(user).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    async fn set_groups(&self, user: Uuid, groups: &[String]) -> Result<bool> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(SET_GROUPS).bind(Json(groups)).bind(Utc::now()).bind(user).execute(self.pool()).await?;
        Ok(done.rows_affected() == 1)
    }
}
