//! The instances filter, from what a client sends (the list's query, a bulk request's
//! `filter`) to the `WHERE` clause of the statements that list, count and act on instances.
//!
//! The clause names only the keys given, so each statement the planner sees can use the index
//! for exactly those keys (a `$1 IS NULL OR ...` form would make one generic plan for all).

use super::content::push_content;
use chrono::{DateTime, Utc};
use sqlx::{Database, Encode, QueryBuilder, Type};
use trellis_model::api::{read_statuses, ContentFilter, InstanceFilter, MAX_CONTENT_FILTERS, MAX_FILTER_IDS};
use trellis_model::{InstanceStatus, Issue};
use uuid::Uuid;

#[derive(Debug, Clone, Default)]
pub struct InstanceQuery {
    pub workflow: Option<Uuid>,
    /// Any of these; empty for any status.
    pub statuses: Vec<InstanceStatus>,
    pub version: Option<i64>,
    pub key: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Failed at this node.
    pub node: Option<String>,
    /// Failed with this error class (or, failed before classes were stored, this error).
    pub error_class: Option<String>,
    /// Only these instances; empty for any.
    pub ids: Vec<Uuid>,
    /// What the input or a node's output must hold; all of them.
    pub content: Vec<ContentFilter>,
    /// Only running instances with a node running or waiting past its slow threshold
    /// (`slow_thresholds`) at this time.
    pub slow_at: Option<DateTime<Utc>>,
    /// A page's cursor: only ids below it.
    pub before: Option<Uuid>,
    pub limit: i64,
}

/// Content filters from `(name, value)` pairs whose names start with `input` or `output`;
/// each problem is an issue at `{prefix}{name}`.
pub fn parse_content<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    prefix: &str,
) -> Result<Vec<ContentFilter>, Vec<Issue>> {
    let (mut filters, mut issues) = (Vec::new(), Vec::new());
    for (name, value) in pairs {
        match ContentFilter::parse(name, value) {
            Ok(filter) => filters.push(filter),
            Err(message) => issues.push(Issue::new("invalid_content_filter", message).path(format!("{prefix}{name}"))),
        }
    }
    if filters.len() + issues.len() > MAX_CONTENT_FILTERS {
        let message = format!("at most {MAX_CONTENT_FILTERS} content filters (`input.…`, `output.…`) at once");
        issues.push(Issue::new("too_many_content_filters", message).path(prefix.trim_end_matches('.').to_owned()));
    }
    if issues.is_empty() {
        Ok(filters)
    } else {
        Err(issues)
    }
}

/// `status` values, each possibly a comma-separated list, as statuses; the error names the
/// first unknown one and the known ones.
pub fn parse_statuses(values: &[String]) -> Result<Vec<InstanceStatus>, String> {
    let (statuses, unknown) = read_statuses(values);
    if let Some(name) = unknown.first() {
        let known: Vec<&str> = InstanceStatus::ALL.iter().map(|s| s.as_str()).collect();
        return Err(format!("unknown status `{name}`; use one of {}", known.join(", ")));
    }
    Ok(statuses)
}

impl InstanceQuery {
    /// A bulk request's filter as a query; each problem is an issue at its `filter.*` path.
    pub fn from_filter(filter: &InstanceFilter) -> Result<InstanceQuery, Vec<Issue>> {
        let mut issues = Vec::new();
        let workflow = filter.workflow.as_deref().and_then(|w| {
            let parsed = Uuid::parse_str(w).ok();
            if parsed.is_none() {
                let message = format!("`{w}` is not a workflow id (a UUID)");
                issues.push(Issue::new("invalid_filter", message).path("filter.workflow"));
            }
            parsed
        });
        let statuses = parse_statuses(&filter.status).unwrap_or_else(|message| {
            issues.push(Issue::new("unknown_status", message).path("filter.status"));
            Vec::new()
        });
        for (value, path) in
            [(&filter.key, "filter.key"), (&filter.node, "filter.node"), (&filter.error_class, "filter.error_class")]
        {
            if value.as_deref().is_some_and(|v| v.contains('\0')) {
                issues.push(Issue::new("invalid_filter", "must not contain NUL").path(path));
            }
        }
        if filter.ids.len() > MAX_FILTER_IDS {
            let message = format!("{} ids given; at most {MAX_FILTER_IDS} per request", filter.ids.len());
            issues.push(Issue::new("too_many_ids", message).path("filter.ids"));
        }
        let mut ids = Vec::with_capacity(filter.ids.len().min(MAX_FILTER_IDS));
        for (n, id) in filter.ids.iter().enumerate() {
            match Uuid::parse_str(id) {
                Ok(id) => ids.push(id),
                Err(_) => issues.push(
                    Issue::new("invalid_filter", format!("`{id}` is not an instance id (a UUID)"))
                        .path(format!("filter.ids[{n}]")),
                ),
            }
        }
        let content = content_of(filter).unwrap_or_else(|more| {
            issues.extend(more);
            Vec::new()
        });
        if !issues.is_empty() {
            return Err(issues);
        }
        Ok(InstanceQuery {
            workflow,
            statuses,
            version: filter.version,
            key: filter.key.clone(),
            since: filter.since,
            until: filter.until,
            node: filter.node.clone(),
            error_class: filter.error_class.clone(),
            ids,
            content,
            slow_at: filter.slow.then(Utc::now),
            before: None,
            limit: 0,
        })
    }

    /// Appends ` WHERE ...` with a condition per key given (`1 = 1` when none), the cursor
    /// included; what follows can go on with ` AND ...`.
    pub fn push_where<'a, DB>(&self, sql: &mut QueryBuilder<'a, DB>)
    where
        DB: Database,
        Uuid: Encode<'a, DB> + Type<DB>,
        i64: Encode<'a, DB> + Type<DB>,
        f64: Encode<'a, DB> + Type<DB>,
        String: Encode<'a, DB> + Type<DB>,
        DateTime<Utc>: Encode<'a, DB> + Type<DB>,
    {
        sql.push(" WHERE 1 = 1");
        if let Some(workflow) = self.workflow {
            sql.push(" AND workflow_id = ").push_bind(workflow);
        }
        if !self.statuses.is_empty() {
            // Literals from a closed set, not binds: the planner sees the values (and which
            // partial or status-led index fits).
            let names: Vec<String> = self.statuses.iter().map(|s| format!("'{}'", s.as_str())).collect();
            sql.push(format!(" AND status IN ({})", names.join(", ")));
        }
        if let Some(version) = self.version {
            sql.push(" AND version = ").push_bind(version);
        }
        if let Some(key) = &self.key {
            sql.push(" AND business_key = ").push_bind(key.clone());
        }
        if let Some(since) = self.since {
            sql.push(" AND created_at >= ").push_bind(since);
        }
        if let Some(until) = self.until {
            sql.push(" AND created_at < ").push_bind(until);
        }
        if let Some(node) = &self.node {
            sql.push(" AND failed_node = ").push_bind(node.clone());
        }
        if let Some(class) = &self.error_class {
            sql.push(" AND COALESCE(error_class, error) = ").push_bind(class.clone());
        }
        if !self.ids.is_empty() {
            sql.push(" AND id IN (");
            let mut list = sql.separated(", ");
            for id in &self.ids {
                list.push_bind(*id);
            }
            sql.push(")");
        }
        for filter in &self.content {
            push_content(filter, sql);
        }
        if let Some(now) = self.slow_at {
            push_slow(sql, now);
        }
        if let Some(before) = self.before {
            sql.push(" AND id < ").push_bind(before);
        }
    }
}

/// A bulk filter's other keys: content filters, or refused as unknown (serde cannot refuse
/// them, the content keys being open).
fn content_of(filter: &InstanceFilter) -> Result<Vec<ContentFilter>, Vec<Issue>> {
    let unknown: Vec<Issue> = filter
        .content
        .keys()
        .filter(|name| !ContentFilter::is_content_name(name))
        .map(|name| {
            let message = format!("unknown field `{name}`; content filters start with `input.` or `output.`");
            Issue::new("unknown_field", message).path(format!("filter.{name}"))
        })
        .collect();
    if !unknown.is_empty() {
        return Err(unknown);
    }
    parse_content(filter.content.iter().map(|(k, v)| (k.as_str(), v.as_str())), "filter.")
}

/// ` AND` the instance runs a node past its threshold at `now`: one primary-key walk of the
/// instance's node rows and one threshold row each (see `crate::slow`).
fn push_slow<'a, DB>(sql: &mut QueryBuilder<'a, DB>, now: DateTime<Utc>)
where
    DB: Database,
    i64: Encode<'a, DB> + Type<DB>,
{
    // The one dialect piece: seconds since the epoch (as `Backend::EPOCH_OF`), chosen by
    // driver because this builder serves both.
    let started = if DB::NAME == "SQLite" {
        "((julianday(n.started_at) - 2440587.5) * 86400000.0)"
    } else {
        "(EXTRACT(EPOCH FROM n.started_at) * 1000)"
    };
    sql.push(format!(
        " AND status = 'running' AND EXISTS (SELECT 1 FROM instance_nodes n JOIN slow_thresholds t \
        ON t.workflow_id = instances.workflow_id AND t.version = instances.version AND t.node_id = n.node_id \
        WHERE n.instance_id = instances.id AND n.status IN ('running', 'waiting') \
        AND {started} + t.threshold_ms < "
    ));
    sql.push_bind(now.timestamp_millis()).push(")");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_parse_from_lists_and_commas_once_each() {
        let given = ["failed,timed_out".to_owned(), "failed".to_owned()];
        assert_eq!(parse_statuses(&given).unwrap(), [InstanceStatus::Failed, InstanceStatus::TimedOut]);
        let err = parse_statuses(&["nope".to_owned()]).unwrap_err();
        assert!(err.contains("`nope`") && err.contains("timed_out"), "{err}");
    }

    #[test]
    fn a_filter_with_bad_values_names_each_path() {
        let filter = InstanceFilter {
            workflow: Some("x".into()),
            status: vec!["bogus".into()],
            ids: vec!["also-bad".into()],
            ..InstanceFilter::default()
        };
        let paths: Vec<_> =
            InstanceQuery::from_filter(&filter).unwrap_err().into_iter().filter_map(|i| i.path).collect();
        assert_eq!(paths, ["filter.workflow", "filter.status", "filter.ids[0]"]);
    }

    #[test]
    fn the_where_clause_names_only_the_keys_given() {
        let query = InstanceQuery {
            statuses: vec![InstanceStatus::Failed, InstanceStatus::Canceled],
            ids: vec![Uuid::nil(), Uuid::max()],
            ..InstanceQuery::default()
        };
        let mut sql = QueryBuilder::<sqlx::Postgres>::new("SELECT id FROM instances");
        query.push_where(&mut sql);
        assert_eq!(
            sql.sql(),
            "SELECT id FROM instances WHERE 1 = 1 AND status IN ('failed', 'canceled') AND id IN ($1, $2)"
        );
    }
}
