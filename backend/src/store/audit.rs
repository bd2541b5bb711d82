//! The audit log's SQL, its trait, rows and statement builder; the SQL that runs them is
//! `queries/audit.rs`, one body for both backends. Rows are inserted (in batches, by the background
//! writer in `http::middleware::audit_trail`), read newest first, and deleted by age by the
//! retention sweeper.

use super::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use trellis_model::Role;
use uuid::Uuid;

pub(super) const AUDIT_COLUMNS: &str =
    "id, at, actor_id, actor_name, actor_role, action, target, status, detail, request_id";
const AUDIT_COLUMN_COUNT: usize = 10;

/// One recorded action.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct AuditRow {
    pub id: Uuid,
    pub at: DateTime<Utc>,
    pub actor_id: Option<String>,
    pub actor_name: String,
    pub actor_role: Option<Role>,
    pub action: String,
    pub target: Option<String>,
    pub status: i32,
    pub detail: Option<String>,
    pub request_id: Option<String>,
}

/// The longest text kept in each caller-influenced column; longer text is cut.
const MAX_NAME_CHARS: usize = 200;
const MAX_ACTION_CHARS: usize = 300;
const MAX_DETAIL_CHARS: usize = 1_000;

impl AuditRow {
    /// The row as it can always be stored: NUL (which Postgres refuses in text, failing the
    /// whole statement) replaced by U+FFFD, and every text cut to its column's bound. Much of
    /// a row comes from the caller (the path's id, a username tried, a problem's detail).
    pub fn sanitized(&self) -> AuditRow {
        let text = |s: &str, max: usize| {
            s.chars().take(max).map(|c| if c == '\0' { '\u{FFFD}' } else { c }).collect::<String>()
        };
        let opt = |s: &Option<String>, max: usize| s.as_deref().map(|s| text(s, max));
        AuditRow {
            id: self.id,
            at: self.at,
            actor_id: opt(&self.actor_id, MAX_NAME_CHARS),
            actor_name: text(&self.actor_name, MAX_NAME_CHARS),
            actor_role: self.actor_role,
            action: text(&self.action, MAX_ACTION_CHARS),
            target: opt(&self.target, MAX_NAME_CHARS),
            status: self.status,
            detail: opt(&self.detail, MAX_DETAIL_CHARS),
            request_id: opt(&self.request_id, MAX_NAME_CHARS),
        }
    }
}

/// Filters of `GET /audit`; `None` matches everything.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// A principal's name (`alice`, `key:ci`, `anonymous`) or id.
    pub actor: Option<String>,
    /// Part of the action, case-insensitive (`versions`, `DELETE `).
    pub action_contains: Option<String>,
    pub target: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Rows older than this id (the cursor).
    pub before: Option<Uuid>,
    pub limit: i64,
}

#[async_trait]
pub trait AuditStore: Send + Sync + 'static {
    /// Appends `rows` in one statement, each [`AuditRow::sanitized`] first.
    async fn insert_audit(&self, rows: &[AuditRow]) -> Result<()>;
    /// Newest first.
    async fn list_audit(&self, query: &AuditQuery) -> Result<Vec<AuditRow>>;
    /// Deletes up to `limit` of the oldest rows from before `before`; returns how many.
    async fn sweep_audit(&self, before: DateTime<Utc>, limit: i64) -> Result<u64>;
}

/// `INSERT ... VALUES ($1, ..., $10), ($11, ...)` for `rows` rows.
pub(super) fn insert_statement(rows: usize) -> String {
    let groups: Vec<String> = (0..rows)
        .map(|r| {
            let params: Vec<String> =
                (1..=AUDIT_COLUMN_COUNT).map(|c| format!("${}", r * AUDIT_COLUMN_COUNT + c)).collect();
            format!("({})", params.join(", "))
        })
        .collect();
    format!("INSERT INTO audit_log ({AUDIT_COLUMNS}) VALUES {}", groups.join(", "))
}

// The statements `queries/audit.rs` runs, named for what they do.
pub(super) const LIST_AUDIT: &str = concatcp!(
    "SELECT ",
    crate::store::audit::AUDIT_COLUMNS,
    " FROM audit_log WHERE ($1 IS NULL OR actor_name = $1 OR actor_id = $1) AND ($2 IS NULL OR \
    LOWER(action) LIKE $2 ESCAPE '\\') AND ($3 IS NULL OR target = $3) AND ($4 IS NULL OR at >= $4) AND \
    ($5 IS NULL OR at < $5) AND ($6 IS NULL OR id < $6) ORDER BY id DESC LIMIT $7"
);
pub(super) const SWEEP_AUDIT: &str =
    "DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)";
