//! Secrets as stored: sealed values and wrapped data keys (`crate::secrets` seals and opens
//! them; nothing here sees a value in the clear). The trait here, the SQL in `queries/secrets.rs`.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::types::Json;
use trellis_model::Definition;
use uuid::Uuid;

/// A secret's row: its value sealed under its data key, the data key wrapped by the master key.
#[derive(Clone, sqlx::FromRow)]
pub struct SecretRow {
    pub name: String,
    pub description: Option<String>,
    pub ciphertext: Vec<u8>,
    pub wrapped_key: Vec<u8>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What may be shown of a secret: everything but its sealed parts.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct SecretInfo {
    pub name: String,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A change to a secret: a new sealed value, a new description (`Some("")` clears it).
pub struct SecretChange {
    pub sealed: Option<(Vec<u8>, Vec<u8>)>,
    pub description: Option<String>,
    pub now: DateTime<Utc>,
}

/// A workflow's draft and latest published version, read for which secrets they reference.
#[derive(sqlx::FromRow)]
pub struct WorkflowTexts {
    pub id: Uuid,
    pub name: String,
    pub draft: Json<Definition>,
    pub published: Option<Json<Definition>>,
}

#[async_trait]
pub trait SecretStore: Send + Sync + 'static {
    /// `false` if a secret of that name exists.
    async fn insert_secret(&self, row: &SecretRow) -> Result<bool>;
    /// Every secret, by name.
    async fn list_secrets(&self) -> Result<Vec<SecretInfo>>;
    async fn secret_info(&self, name: &str) -> Result<Option<SecretInfo>>;
    /// The sealed row of `name`, for the attempt that uses it.
    async fn sealed_secret(&self, name: &str) -> Result<Option<SecretRow>>;
    /// `false` if there is no such secret.
    async fn update_secret(&self, name: &str, change: &SecretChange) -> Result<bool>;
    /// `false` if there is no such secret.
    async fn delete_secret(&self, name: &str) -> Result<bool>;
    /// Every secret's name and wrapped data key (for master-key rotation).
    async fn wrapped_keys(&self) -> Result<Vec<(String, Vec<u8>)>>;
    /// Master-key rotation in one transaction: replaces each of `rewrapped`'s wrapped keys and
    /// the key check value, if the check value is still `expected_check` and no secret was
    /// added meanwhile (`false`, nothing written, otherwise).
    async fn rewrap_secrets(&self, rewrapped: &[(String, Vec<u8>)], expected_check: &str, check: &str) -> Result<bool>;
    /// Every workflow's draft and latest version (archived ones too), for `used_by`.
    async fn workflow_texts(&self) -> Result<Vec<WorkflowTexts>>;
}

/// The `settings` key of the key check value.
pub const MASTER_KEY_CHECK: &str = "secrets.master_key_check";

const INFO_COLUMNS: &str = "name, description, created_at, updated_at";
pub(super) const INSERT_SECRET: &str =
    "INSERT INTO secrets (name, description, ciphertext, wrapped_key, created_at, updated_at) VALUES ($1, $2, \
    $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING";
pub(super) const LIST_SECRETS: &str = const_format::concatcp!("SELECT ", INFO_COLUMNS, " FROM secrets ORDER BY name");
pub(super) const SECRET_INFO: &str = const_format::concatcp!("SELECT ", INFO_COLUMNS, " FROM secrets WHERE name = $1");
pub(super) const SEALED_SECRET: &str =
    "SELECT name, description, ciphertext, wrapped_key, created_at, updated_at FROM secrets WHERE name = $1";
/// `$1`/`$2` a new sealed value or both NULL; `$3` whether to set the description to `$4`.
pub(super) const UPDATE_SECRET: &str =
    "UPDATE secrets SET ciphertext = COALESCE($1, ciphertext), wrapped_key = COALESCE($2, wrapped_key), \
    description = CASE WHEN $3 THEN $4 ELSE description END, updated_at = $5 WHERE name = $6";
pub(super) const DELETE_SECRET: &str = "DELETE FROM secrets WHERE name = $1";
pub(super) const WRAPPED_KEYS: &str = "SELECT name, wrapped_key FROM secrets ORDER BY name";
pub(super) const COUNT_SECRETS: &str = "SELECT COUNT(*) FROM secrets";
pub(super) const REWRAP_SECRET: &str = "UPDATE secrets SET wrapped_key = $1 WHERE name = $2";
pub(super) const REPLACE_CHECK: &str = "UPDATE settings SET value = $1 WHERE key = $2 AND value = $3";
pub(super) const WORKFLOW_TEXTS: &str =
    "SELECT w.id, w.name, w.draft, v.definition AS published FROM workflows w LEFT JOIN workflow_versions v ON \
    v.workflow_id = w.id AND v.version = w.latest_version ORDER BY w.name, w.id";
