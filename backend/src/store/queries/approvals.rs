//! `approvals.rs` for one backend (`Store`): included once per backend by `postgres.rs` and `sqlite.rs`.

use super::{push_binds, KeepBuilt, Store};
use crate::store::approvals::{
    ApprovalQuery, ApprovalRow, ApprovalStore, Decided, DecisionRow, NewApproval, Person, APPROVALS_OF_INSTANCE,
    APPROVAL_OF_ATTEMPT, APPROVAL_SELECT, CANCEL_DEAD, CLOSED_BUT_WAITING, CLOSE_APPROVAL, COUNT_DECISIONS,
    DECISIONS_OF, GET_APPROVAL, GET_APPROVAL_OF_ATTEMPT, INSERT_APPROVAL, INSERT_ASSIGNEES, INSERT_DECISION, IS_OPEN,
    STATUS_OF_ATTEMPT, TIME_OUT_APPROVAL,
};
use crate::store::backend::Backend;
use crate::store::{retry_transient, Result};
use chrono::{DateTime, SubsecRound, Utc};
use sqlx::types::Json;
use trellis_model::api::{ApprovalStatus, Verdict};
use trellis_model::Role;
use uuid::Uuid;

type Db = <Store as Backend>::Db;

const LOCK_APPROVAL: &str = const_format::concatcp!(
    "SELECT status, required, instance_id, node_id, attempt FROM approvals WHERE id = $1",
    <Store as Backend>::LOCK_ROW
);
/// Whether the node still runs or waits on the attempt.
const NODE_ON_ATTEMPT: &str = "SELECT COUNT(*) FROM instance_nodes WHERE instance_id = $1 AND node_id = $2 \
     AND attempts = $3 AND status IN ('waiting', 'running')";

/// Appends the condition that `person` may decide the approval `a` now: open, one of its
/// assignees, not decided by them yet, and not its starter unless the starter may.
fn push_decidable<'a>(sql: &mut sqlx::QueryBuilder<'a, Db>, person: &'a Person) {
    sql.push(" AND ").push(IS_OPEN);
    sql.push(" AND EXISTS (SELECT 1 FROM approval_assignees s WHERE s.approval_id = a.id AND ((s.kind = 'user' AND s.name = ");
    sql.push_bind(person.name.as_str());
    sql.push(")");
    // An API key is an assignee only by its name (`Person::key`).
    if !person.key {
        sql.push(" OR (s.kind = 'role' AND s.name IN (");
        push_binds(sql, Role::ALL.iter().filter(|r| person.role >= **r).map(|r| r.as_str()));
        sql.push("))");
    }
    if !person.groups.is_empty() && !person.key {
        sql.push(" OR (s.kind = 'group' AND s.name IN (");
        push_binds(sql, person.groups.iter().map(String::as_str));
        sql.push("))");
    }
    sql.push("))");
    sql.push(" AND NOT EXISTS (SELECT 1 FROM approval_decisions d WHERE d.approval_id = a.id AND d.username = ");
    sql.push_bind(person.name.as_str());
    sql.push(") AND (a.allow_starter OR a.started_by IS NULL OR a.started_by <> ");
    sql.push_bind(person.name.as_str());
    sql.push(")");
}

impl Store {
    async fn create_approval_once(&self, new: &NewApproval) -> Result<(Uuid, bool)> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let inserted = sqlx::query(INSERT_APPROVAL)
            .bind(new.id)
            .bind(new.instance_id)
            .bind(new.workflow_id)
            .bind(&new.node_id)
            .bind(new.attempt)
            .bind(&new.title)
            .bind(&new.description)
            .bind(Json(&new.assignees))
            .bind(new.required)
            .bind(new.allow_starter)
            .bind(new.form.as_ref().map(Json))
            .bind(&new.started_by)
            .bind(new.created_at.trunc_subsecs(6))
            .bind(new.due_at.map(|t| t.trunc_subsecs(6)))
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if !inserted {
            let (id,): (Uuid,) = sqlx::query_as(APPROVAL_OF_ATTEMPT)
                .bind(new.instance_id)
                .bind(&new.node_id)
                .bind(new.attempt)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            return Ok((id, false));
        }
        let a = &new.assignees;
        let mut names: Vec<(&str, &str)> = Vec::new();
        names.extend(a.users.iter().map(|n| ("user", n.as_str())));
        names.extend(a.roles.iter().map(|n| ("role", n.as_str())));
        names.extend(a.groups.iter().map(|n| ("group", n.as_str())));
        names.sort_unstable();
        names.dedup();
        if !names.is_empty() {
            let mut insert = sqlx::QueryBuilder::<Db>::new(INSERT_ASSIGNEES);
            insert.push_values(&names, |mut v, (kind, name)| {
                v.push_bind(new.id).push_bind(*kind).push_bind(*name);
            });
            insert.build().keep_built().execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok((new.id, true))
    }

    async fn decide_once(&self, d: &DecisionRow) -> Result<Decided> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        let Some((status, required, instance, node, attempt)): Option<(String, i32, Uuid, String, i32)> =
            sqlx::query_as(LOCK_APPROVAL).bind(d.approval_id).fetch_optional(&mut *tx).await?
        else {
            return Ok(Decided::NotFound);
        };
        let (on_attempt,): (i64,) =
            sqlx::query_as(NODE_ON_ATTEMPT).bind(instance).bind(&node).bind(attempt).fetch_one(&mut *tx).await?;
        let current = on_attempt > 0;
        let stored = ApprovalStatus::parse(&status).unwrap_or(ApprovalStatus::Canceled);
        if stored != ApprovalStatus::Open || !current {
            let now = if stored == ApprovalStatus::Open { ApprovalStatus::Canceled } else { stored };
            return Ok(Decided::NotOpen(now));
        }
        let counted = sqlx::query(INSERT_DECISION)
            .bind(d.approval_id)
            .bind(&d.username)
            .bind(&d.decision)
            .bind(d.response.as_ref())
            .bind(&d.comment)
            .bind(d.decided_at.trunc_subsecs(6))
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if !counted {
            return Ok(Decided::Repeated);
        }
        let (approvals, rejections): (i64, i64) =
            sqlx::query_as(COUNT_DECISIONS).bind(d.approval_id).fetch_one(&mut *tx).await?;
        let closes = match (rejections > 0, approvals >= i64::from(required)) {
            (true, _) => Some(ApprovalStatus::Rejected),
            (false, true) => Some(ApprovalStatus::Approved),
            (false, false) => None,
        };
        if let Some(closed) = closes {
            sqlx::query(CLOSE_APPROVAL)
                .bind(closed.as_str())
                .bind(d.decided_at.trunc_subsecs(6))
                .bind(d.approval_id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(closes.map_or(Decided::Counted, Decided::Closed))
    }

    async fn time_out_once(&self, instance: Uuid, node: &str, attempt: i32) -> Result<Option<ApprovalStatus>> {
        let _guard = self.write_guard().await;
        let mut tx = self.pool().begin().await?;
        sqlx::query(TIME_OUT_APPROVAL)
            .bind(Utc::now().trunc_subsecs(6))
            .bind(instance)
            .bind(node)
            .bind(attempt)
            .execute(&mut *tx)
            .await?;
        let status: Option<String> = sqlx::query_scalar(STATUS_OF_ATTEMPT)
            .bind(instance)
            .bind(node)
            .bind(attempt)
            .fetch_optional(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(status.and_then(|s| ApprovalStatus::parse(&s)))
    }
}

#[async_trait::async_trait]
impl ApprovalStore for Store {
    async fn create_approval(&self, new: &NewApproval) -> Result<(Uuid, bool)> {
        retry_transient(|| self.create_approval_once(new)).await
    }

    async fn get_approval(&self, id: Uuid) -> Result<Option<ApprovalRow>> {
        Ok(sqlx::query_as(GET_APPROVAL).bind(id).fetch_optional(self.pool()).await?)
    }

    async fn approval_of_attempt(&self, instance: Uuid, node: &str, attempt: i32) -> Result<Option<ApprovalRow>> {
        let query = sqlx::query_as(GET_APPROVAL_OF_ATTEMPT).bind(instance).bind(node).bind(attempt);
        Ok(query.fetch_optional(self.pool()).await?)
    }

    async fn approvals_of_instance(&self, instance: Uuid) -> Result<Vec<(String, Uuid)>> {
        let rows: Vec<(String, Uuid)> =
            sqlx::query_as(APPROVALS_OF_INSTANCE).bind(instance).fetch_all(self.pool()).await?;
        // Ordered by attempt within a node: the last of each node is its latest.
        let mut latest: Vec<(String, Uuid)> = Vec::new();
        for (node, id) in rows {
            match latest.last_mut() {
                Some(last) if last.0 == node => last.1 = id,
                _ => latest.push((node, id)),
            }
        }
        Ok(latest)
    }

    async fn list_approvals(&self, q: &ApprovalQuery) -> Result<Vec<ApprovalRow>> {
        let mut sql = sqlx::QueryBuilder::<Db>::new(APPROVAL_SELECT);
        sql.push(" WHERE 1 = 1");
        match q.open {
            Some(true) => {
                sql.push(" AND ").push(IS_OPEN);
            }
            Some(false) => {
                sql.push(" AND NOT ").push(IS_OPEN);
            }
            None => {}
        }
        if let Some(person) = &q.decidable_by {
            push_decidable(&mut sql, person);
        }
        if let Some(user) = &q.decided_by {
            sql.push(" AND EXISTS (SELECT 1 FROM approval_decisions d WHERE d.approval_id = a.id AND d.username = ");
            sql.push_bind(user.as_str()).push(")");
        }
        if let Some(instance) = q.instance {
            sql.push(" AND a.instance_id = ").push_bind(instance);
        }
        if let Some(before) = q.before {
            sql.push(" AND a.id < ").push_bind(before);
        }
        sql.push(" ORDER BY a.id DESC LIMIT ").push_bind(i64::from(q.limit));
        Ok(sql.build_query_as().keep_built().fetch_all(self.pool()).await?)
    }

    async fn count_decidable(&self, person: &Person) -> Result<i64> {
        let mut sql = sqlx::QueryBuilder::<Db>::new(
            "SELECT COUNT(*) FROM approvals a \
             LEFT JOIN instance_nodes n ON n.instance_id = a.instance_id AND n.node_id = a.node_id WHERE 1 = 1",
        );
        push_decidable(&mut sql, person);
        let (count,): (i64,) = sql.build_query_as().keep_built().fetch_one(self.pool()).await?;
        Ok(count)
    }

    async fn decisions_of(&self, ids: &[Uuid]) -> Result<Vec<DecisionRow>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = sqlx::QueryBuilder::<Db>::new(DECISIONS_OF);
        push_binds(&mut sql, ids.iter().copied());
        sql.push(") ORDER BY decided_at, username");
        Ok(sql.build_query_as().keep_built().fetch_all(self.pool()).await?)
    }

    async fn decide(&self, decision: &DecisionRow) -> Result<Decided> {
        debug_assert!(Verdict::parse_past(&decision.decision).is_some());
        retry_transient(|| self.decide_once(decision)).await
    }

    async fn time_out_approval(&self, instance: Uuid, node: &str, attempt: i32) -> Result<Option<ApprovalStatus>> {
        retry_transient(|| self.time_out_once(instance, node, attempt)).await
    }

    async fn closed_but_waiting(&self, since: DateTime<Utc>, limit: i64) -> Result<Vec<ApprovalRow>> {
        let query = sqlx::query_as(CLOSED_BUT_WAITING).bind(since.trunc_subsecs(6)).bind(limit);
        Ok(query.fetch_all(self.pool()).await?)
    }

    async fn cancel_dead_approvals(&self, limit: i64) -> Result<u64> {
        let _guard = self.write_guard().await;
        let done = sqlx::query(CANCEL_DEAD).bind(Utc::now().trunc_subsecs(6)).bind(limit).execute(self.pool()).await?;
        Ok(done.rows_affected())
    }
}
