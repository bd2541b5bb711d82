//! Approvals (`approval` nodes; the SQL body in `queries/approvals.rs`): the question an
//! attempt asked, who may answer, each person's one decision, and which of a decision or the
//! timeout closed it. `approvals.status` moves from `open` once, under the row's lock: that is
//! what makes an approval decided exactly once across processes. The node's transition follows
//! the close (`engine/approvals/`); a close a crash left without its transition is found by
//! [`ApprovalStore::closed_but_waiting`].

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use serde_json::Value;
use sqlx::types::Json;
use trellis_model::api::{ApprovalDecision, ApprovalStatus, Assignees};
use trellis_model::Role;
use uuid::Uuid;

use super::Result;

/// What an approval node's attempt asks, as stored when it asks.
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    pub id: Uuid,
    pub instance_id: Uuid,
    pub workflow_id: Uuid,
    pub node_id: String,
    pub attempt: i32,
    pub title: String,
    pub description: Option<String>,
    pub assignees: Assignees,
    pub required: i32,
    pub allow_starter: bool,
    pub form: Option<Value>,
    pub started_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub due_at: Option<DateTime<Utc>>,
}

/// An approval as stored, with its workflow's name and its node's state now.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ApprovalRow {
    pub id: Uuid,
    pub instance_id: Uuid,
    pub workflow_id: Uuid,
    pub workflow_name: String,
    pub node_id: String,
    pub attempt: i32,
    pub title: String,
    pub description: Option<String>,
    pub assignees: Json<Assignees>,
    pub required: i32,
    pub allow_starter: bool,
    pub form: Option<Json<Value>>,
    pub started_by: Option<String>,
    /// As stored: `open` until a decision or the timeout closed it.
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub due_at: Option<DateTime<Utc>>,
    pub closed_at: Option<DateTime<Utc>>,
    /// Whether its node still runs or waits on its attempt: an open row whose node moved on
    /// (the run was canceled, timed out as a whole, or the attempt never came to wait) is over.
    pub node_current: bool,
}

impl ApprovalRow {
    /// Where it stands, as the API says it.
    pub fn status(&self) -> ApprovalStatus {
        match ApprovalStatus::parse(&self.status) {
            Some(ApprovalStatus::Open) if !self.node_current => ApprovalStatus::Canceled,
            Some(status) => status,
            None => ApprovalStatus::Canceled,
        }
    }
}

/// One person's decision.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct DecisionRow {
    pub approval_id: Uuid,
    pub username: String,
    /// `approved` or `rejected`.
    pub decision: String,
    pub response: Option<Json<Value>>,
    pub comment: Option<String>,
    pub decided_at: DateTime<Utc>,
}

impl DecisionRow {
    /// The decision as the API lists it and the node's output holds it.
    pub fn view(&self) -> ApprovalDecision {
        ApprovalDecision {
            user: self.username.clone(),
            decision: self.decision.clone(),
            response: self.response.as_ref().map_or(Value::Null, |r| r.0.clone()),
            comment: self.comment.clone(),
            at: self.decided_at,
        }
    }
}

/// Why a person may not decide an approval now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// It is closed (or its run moved on): how it stands.
    NotOpen(ApprovalStatus),
    NotAssignee,
    /// They started its run, and its node does not let the starter decide.
    Starter,
}

impl ApprovalRow {
    /// Whether `person` may decide it now by its own rules (open, an assignee, not its run's
    /// starter unless allowed); whether they decided it already is the decisions' to say.
    pub fn refusal(&self, person: &Person) -> Option<Refusal> {
        let status = self.status();
        if !status.is_open() {
            Some(Refusal::NotOpen(status))
        } else if !person.is_among(&self.assignees) {
            Some(Refusal::NotAssignee)
        } else if !self.allow_starter && self.started_by.as_deref() == Some(person.name.as_str()) {
            Some(Refusal::Starter)
        } else {
            None
        }
    }
}

/// Who asks: the inbox's "mine" is what such a person may decide.
#[derive(Debug, Clone, PartialEq)]
pub struct Person {
    pub name: String,
    pub role: Role,
    pub groups: Vec<String>,
    /// An API key (`key:<name>`): it stands for no person, so it is an assignee only where
    /// one names it (`"users": ["key:ci"]`), never by its role. Otherwise one person could
    /// make up a quorum with a key, or approve through a key what they started themselves.
    pub key: bool,
}

impl Person {
    /// Whether `assignees` name this person.
    pub fn is_among(&self, assignees: &Assignees) -> bool {
        match self.key {
            true => assignees.users.contains(&self.name),
            false => assignees.includes(&self.name, self.role, &self.groups),
        }
    }
}

/// Which approvals a list holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApprovalQuery {
    /// `Some(true)`: open ones; `Some(false)`: closed ones (however they closed).
    pub open: Option<bool>,
    /// Open ones this person may decide now.
    pub decidable_by: Option<Person>,
    /// Ones this user decided.
    pub decided_by: Option<String>,
    pub instance: Option<Uuid>,
    /// Older than this id (the page before it ended there).
    pub before: Option<Uuid>,
    pub limit: u32,
}

/// What a decision did.
#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// Counted; the approval stays open.
    Counted,
    /// Counted, and it closed the approval as `approved` or `rejected`.
    Closed(ApprovalStatus),
    /// This person decided it already.
    Repeated,
    /// It is closed (or its run moved on): nothing counted.
    NotOpen(ApprovalStatus),
    NotFound,
}

#[async_trait]
pub trait ApprovalStore: Send + Sync + 'static {
    /// Stores what an attempt asks; asking again for the same attempt (its run repeated after
    /// a crash) keeps the first. Returns the approval's id and whether it is new.
    async fn create_approval(&self, new: &NewApproval) -> Result<(Uuid, bool)>;
    async fn get_approval(&self, id: Uuid) -> Result<Option<ApprovalRow>>;
    /// The approval attempt `attempt` of `node` asked, if it asked.
    async fn approval_of_attempt(&self, instance: Uuid, node: &str, attempt: i32) -> Result<Option<ApprovalRow>>;
    /// The latest approval of each of an instance's approval nodes: (node id, approval id).
    async fn approvals_of_instance(&self, instance: Uuid) -> Result<Vec<(String, Uuid)>>;
    /// A page, newest first.
    async fn list_approvals(&self, query: &ApprovalQuery) -> Result<Vec<ApprovalRow>>;
    /// How many open approvals `person` may decide now.
    async fn count_decidable(&self, person: &Person) -> Result<i64>;
    /// The decisions on each of `ids`, in the order they were made.
    async fn decisions_of(&self, ids: &[Uuid]) -> Result<Vec<DecisionRow>>;
    /// Records `decision` if the approval is open and its author has not decided it, and
    /// closes it when it is a rejection or the `required`-th approval: all under the
    /// approval's lock, so of two decisions at once on two processes each sees the other's.
    async fn decide(&self, decision: &DecisionRow) -> Result<Decided>;
    /// Closes the open approval of an attempt as `timed_out`. Returns the status it has after:
    /// `timed_out`, or how a decision closed it first (`None`: there is none).
    async fn time_out_approval(&self, instance: Uuid, node: &str, attempt: i32) -> Result<Option<ApprovalStatus>>;
    /// Approvals closed since `since` while their node still waits on their attempt: a crash
    /// came between the close and the node's transition (or that transition is under way).
    async fn closed_but_waiting(&self, since: DateTime<Utc>, limit: i64) -> Result<Vec<ApprovalRow>>;
    /// Marks `canceled` up to `limit` open approvals whose node no longer runs or waits on
    /// their attempt (the run was canceled or timed out as a whole, or the attempt was lost
    /// before it came to wait), so that open rows stay few. Returns how many.
    async fn cancel_dead_approvals(&self, limit: i64) -> Result<u64>;
}

/// The columns of an [`ApprovalRow`], over `approvals a`, `workflows w` and the node `n`.
pub(super) const APPROVAL_SELECT: &str = "SELECT a.id, a.instance_id, a.workflow_id, w.name AS workflow_name, \
     a.node_id, a.attempt, a.title, a.description, a.assignees, a.required, a.allow_starter, a.form, a.started_by, \
     a.status, a.created_at, a.due_at, a.closed_at, \
     COALESCE(n.attempts = a.attempt AND n.status IN ('waiting', 'running'), FALSE) AS node_current \
     FROM approvals a JOIN workflows w ON w.id = a.workflow_id \
     LEFT JOIN instance_nodes n ON n.instance_id = a.instance_id AND n.node_id = a.node_id";
/// Open, and its node still on it.
pub(super) const IS_OPEN: &str =
    "COALESCE(a.status = 'open' AND n.attempts = a.attempt AND n.status IN ('waiting', 'running'), FALSE)";
pub(super) const GET_APPROVAL: &str = concatcp!(APPROVAL_SELECT, " WHERE a.id = $1");
pub(super) const GET_APPROVAL_OF_ATTEMPT: &str =
    concatcp!(APPROVAL_SELECT, " WHERE a.instance_id = $1 AND a.node_id = $2 AND a.attempt = $3");
pub(super) const INSERT_APPROVAL: &str = "INSERT INTO approvals (id, instance_id, workflow_id, node_id, attempt, \
     title, description, assignees, required, allow_starter, form, started_by, status, created_at, due_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'open', $13, $14) \
     ON CONFLICT (instance_id, node_id, attempt) DO NOTHING";
pub(super) const APPROVAL_OF_ATTEMPT: &str =
    "SELECT id FROM approvals WHERE instance_id = $1 AND node_id = $2 AND attempt = $3";
pub(super) const INSERT_ASSIGNEES: &str = "INSERT INTO approval_assignees (approval_id, kind, name) ";
pub(super) const APPROVALS_OF_INSTANCE: &str =
    "SELECT node_id, id FROM approvals WHERE instance_id = $1 ORDER BY node_id, attempt";
pub(super) const DECISIONS_OF: &str = "SELECT approval_id, username, decision, response, comment, decided_at \
     FROM approval_decisions WHERE approval_id IN (";
pub(super) const INSERT_DECISION: &str = "INSERT INTO approval_decisions (approval_id, username, decision, \
     response, comment, decided_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (approval_id, username) DO NOTHING";
pub(super) const COUNT_DECISIONS: &str = "SELECT COALESCE(SUM(CASE WHEN decision = 'approved' THEN 1 ELSE 0 END), 0), \
     COALESCE(SUM(CASE WHEN decision = 'rejected' THEN 1 ELSE 0 END), 0) FROM approval_decisions WHERE approval_id = $1";
pub(super) const CLOSE_APPROVAL: &str =
    "UPDATE approvals SET status = $1, closed_at = $2 WHERE id = $3 AND status = 'open'";
pub(super) const TIME_OUT_APPROVAL: &str = "UPDATE approvals SET status = 'timed_out', closed_at = $1 \
     WHERE instance_id = $2 AND node_id = $3 AND attempt = $4 AND status = 'open'";
pub(super) const STATUS_OF_ATTEMPT: &str =
    "SELECT status FROM approvals WHERE instance_id = $1 AND node_id = $2 AND attempt = $3";
pub(super) const CLOSED_BUT_WAITING: &str = concatcp!(
    APPROVAL_SELECT,
    " WHERE a.closed_at > $1 AND a.status IN ('approved', 'rejected', 'timed_out') AND n.attempts = a.attempt \
     AND n.status = 'waiting' ORDER BY a.closed_at LIMIT $2"
);
pub(super) const CANCEL_DEAD: &str = concatcp!(
    "UPDATE approvals SET status = 'canceled', closed_at = $1 WHERE status = 'open' AND id IN (SELECT a.id FROM \
     approvals a LEFT JOIN instance_nodes n ON n.instance_id = a.instance_id AND n.node_id = a.node_id \
     WHERE NOT ",
    IS_OPEN,
    " AND a.status = 'open' LIMIT $2)"
);
