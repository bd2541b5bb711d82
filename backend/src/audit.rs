//! The audit log's writer: a bounded queue drained by one background task that inserts
//! rows in batches.
//!
//! Audit rows are written after the action they describe, off the request path: a slow or
//! failing database write must neither fail nor delay the action (the action already
//! happened; refusing to answer would not undo it). The price is that a crash can lose the
//! rows still queued (at most a batch or two, a few milliseconds' worth), and that a flood
//! beyond the queue's capacity drops rows, counted and logged. See ARCHITECTURE.md.

use crate::auth::{Principal, Role};
use crate::store::{AuditRow, AuditStore, StoreError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Rows waiting to be written; beyond this, new rows are dropped (and counted).
const QUEUE: usize = 10_000;
/// Rows per INSERT.
const BATCH: usize = 200;
const WRITE_ATTEMPTS: u32 = 3;
/// How long the writer lets a burst gather before inserting it: one statement (and on
/// SQLite one fsync under the single writer lock) for many rows, instead of one per
/// request competing with the engine's own writes.
const LINGER: Duration = Duration::from_millis(200);

/// Who acted, as the audit log records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Actor {
    pub id: Option<String>,
    pub name: String,
    pub role: Option<Role>,
}

impl Actor {
    pub fn anonymous() -> Actor {
        Actor { id: None, name: "anonymous".into(), role: None }
    }

    /// A sign-in attempt: only the username tried is known (never the password). Cut to a
    /// sane length, since anyone can send any text here.
    pub fn signing_in(username: &str) -> Actor {
        Actor { id: None, name: clip(username), role: None }
    }
}

/// Caller-chosen text in an audit row (usernames tried, request ids) is kept to this many
/// characters.
pub const MAX_TEXT_CHARS: usize = 200;

pub fn clip(text: &str) -> String {
    text.chars().take(MAX_TEXT_CHARS).collect()
}

impl From<&Principal> for Actor {
    fn from(p: &Principal) -> Actor {
        Actor { id: Some(p.id.clone()), name: p.name.clone(), role: Some(p.role) }
    }
}

/// What a successful change did, for the audit row's `detail`, when its route alone does not
/// say it (an approval's decision: approve or reject, and whether it closed the approval). A
/// handler returns it as a response extension; it must never carry a request's body.
#[derive(Debug, Clone)]
pub struct AuditNote(pub String);

/// Where the request's authentication leaves the caller for the audit middleware to read
/// after the handler: the middleware puts a slot into the request's extensions, the
/// `Authed` extractor (or the login handler) fills it. So the caller is authenticated once.
#[derive(Debug, Clone, Default)]
pub struct AuditSlot(Arc<Mutex<Option<Actor>>>);

impl AuditSlot {
    pub fn set(&self, actor: Actor) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(actor);
    }

    pub fn actor(&self) -> Option<Actor> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The sending side, shared by every request.
pub struct AuditLog {
    queue: mpsc::Sender<AuditRow>,
    dropped: AtomicU64,
}

impl AuditLog {
    /// Starts the writer; it stops once every `AuditLog` handle is gone and the queue is
    /// written out.
    pub fn start(store: Arc<dyn AuditStore>) -> (Arc<AuditLog>, JoinHandle<()>) {
        let (queue, rows) = mpsc::channel(QUEUE);
        let writer = tokio::spawn(write_loop(store, rows));
        (Arc::new(AuditLog { queue, dropped: AtomicU64::new(0) }), writer)
    }

    /// Queues `row` without waiting.
    pub fn record(&self, row: AuditRow) {
        if let Err(e) = self.queue.try_send(row) {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            let row = match &e {
                mpsc::error::TrySendError::Full(r) | mpsc::error::TrySendError::Closed(r) => r,
            };
            tracing::warn!(action = %row.action, actor = %row.actor_name, dropped, "audit queue full or closed; row dropped");
        }
    }

    /// Rows dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

async fn write_loop(store: Arc<dyn AuditStore>, mut rows: mpsc::Receiver<AuditRow>) {
    let mut batch = Vec::with_capacity(BATCH);
    while rows.recv_many(&mut batch, BATCH).await > 0 {
        // A full batch goes at once; lingering only gathers a short one (a fixed wait per
        // batch would cap the writer at BATCH rows per LINGER).
        if batch.len() < BATCH {
            tokio::time::sleep(LINGER).await;
            while batch.len() < BATCH {
                match rows.try_recv() {
                    Ok(row) => batch.push(row),
                    Err(_) => break,
                }
            }
        }
        write_batch(&*store, &batch).await;
        batch.clear();
    }
}

/// Retries transient failures briefly, then gives the batch up with a warning: the audit
/// log must not grow a backlog that holds memory while the database is down. A batch the
/// database refuses because of its content is written again row by row, so one bad row
/// (whoever sent it) costs only itself, never the other callers' rows.
async fn write_batch(store: &dyn AuditStore, batch: &[AuditRow]) {
    let error = match insert(store, batch).await {
        Ok(()) => return,
        Err(e) => e,
    };
    if !refused_for_content(&error) || batch.len() == 1 {
        tracing::warn!(error = %error, rows = batch.len(), "could not write audit rows; they are lost");
        return;
    }
    tracing::warn!(error = %error, rows = batch.len(), "the database refused an audit batch; writing its rows one by one");
    for row in batch {
        if let Err(e) = insert(store, std::slice::from_ref(row)).await {
            tracing::warn!(error = %e, id = %row.id, action = %row.action, "could not write an audit row; it is lost");
        }
    }
}

/// One insert, retried while the failure looks transient (the database away or busy).
async fn insert(store: &dyn AuditStore, rows: &[AuditRow]) -> Result<(), StoreError> {
    let mut attempt = 1;
    loop {
        match store.insert_audit(rows).await {
            Err(e) if attempt < WRITE_ATTEMPTS && !refused_for_content(&e) => {
                tracing::debug!(error = %e, attempt, "audit write failed; retrying");
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                attempt += 1;
            }
            done => return done,
        }
    }
}

/// The database answered and refused the statement (a constraint, a value it cannot take):
/// retrying the same rows cannot help, but the other rows of the batch can still be written.
fn refused_for_content(e: &StoreError) -> bool {
    matches!(e, StoreError::Conflict(_) | StoreError::Database(sqlx::Error::Database(_) | sqlx::Error::Encode(_)))
}
