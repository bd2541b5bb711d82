//! Content filters (`input.<path>=<value>`, `output.<node>.<path>=<value>`) as SQL conditions
//! on `instances`, one text per dialect, every caller-given piece bound.
//!
//! - Postgres: JSON containment, `input @> '{"order":{"customer":"acme"}}'`, which compares
//!   JSON types (`42` ≠ `"42"`, `42` = `42.0`) and is served by the GIN index
//!   `instances_input_content` (migration 0021). For scalars at an object path containment is
//!   exactly equality; a path ending at an array does not match a scalar.
//! - SQLite: `json_type` at the path names the JSON type (text, integer/real, true, false,
//!   null), then `json_extract` compares the value: `json_extract` alone reads `true` as `1`
//!   and cannot tell `"42"` from a number on its own. No index serves it: SQLite scans.
//! - A node's output: `EXISTS` over its `instance_nodes` row (the primary key finds it), so
//!   the newest-first page stops at its limit; outputs carry no content index (see 0021).

use serde_json::{Map, Value};
use sqlx::{Database, Encode, QueryBuilder, Type};
use trellis_model::api::{ContentFilter, ContentSource};

/// Which SQL text a builder needs; read from the driver, as the filter is built per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Postgres,
    Sqlite,
}

impl Dialect {
    fn of<DB: Database>() -> Dialect {
        if DB::NAME == "PostgreSQL" {
            Dialect::Postgres
        } else {
            Dialect::Sqlite
        }
    }
}

/// Appends ` AND <condition>` for `filter`.
pub(super) fn push_content<'a, DB>(filter: &ContentFilter, sql: &mut QueryBuilder<'a, DB>)
where
    DB: Database,
    i64: Encode<'a, DB> + Type<DB>,
    f64: Encode<'a, DB> + Type<DB>,
    String: Encode<'a, DB> + Type<DB>,
{
    let dialect = Dialect::of::<DB>();
    match &filter.source {
        ContentSource::Input => {
            sql.push(" AND ");
            push_compare(dialect, "instances.input", filter, sql);
        }
        ContentSource::Output(node) => {
            sql.push(" AND EXISTS (SELECT 1 FROM instance_nodes n WHERE n.instance_id = instances.id AND n.node_id = ");
            sql.push_bind(node.clone()).push(" AND ");
            push_compare(dialect, "n.output", filter, sql);
            sql.push(")");
        }
    }
}

/// `column` holds `filter.value` at `filter.path`.
fn push_compare<'a, DB>(dialect: Dialect, column: &str, filter: &ContentFilter, sql: &mut QueryBuilder<'a, DB>)
where
    DB: Database,
    i64: Encode<'a, DB> + Type<DB>,
    f64: Encode<'a, DB> + Type<DB>,
    String: Encode<'a, DB> + Type<DB>,
{
    match dialect {
        // The whole value compared: containment would let an array contain the scalar.
        Dialect::Postgres if filter.path.is_empty() => {
            sql.push(format!("{column} = CAST(")).push_bind(filter.value.to_string()).push(" AS jsonb)");
        }
        Dialect::Postgres => {
            let nested = nest(&filter.path, filter.value.clone()).to_string();
            sql.push(format!("{column} @> CAST(")).push_bind(nested).push(" AS jsonb)");
        }
        Dialect::Sqlite => push_sqlite_compare(column, filter, sql),
    }
}

fn push_sqlite_compare<'a, DB>(column: &str, filter: &ContentFilter, sql: &mut QueryBuilder<'a, DB>)
where
    DB: Database,
    i64: Encode<'a, DB> + Type<DB>,
    f64: Encode<'a, DB> + Type<DB>,
    String: Encode<'a, DB> + Type<DB>,
{
    let path = sqlite_path(&filter.path);
    // Literals from a closed set: the JSON type names `json_type` answers.
    let types = match &filter.value {
        Value::String(_) => "('text')",
        Value::Number(_) => "('integer', 'real')",
        Value::Bool(true) => "('true')",
        Value::Bool(false) => "('false')",
        _ => "('null')",
    };
    sql.push(format!("json_type({column}, ")).push_bind(path.clone()).push(format!(") IN {types}"));
    let compare = |sql: &mut QueryBuilder<'a, DB>| {
        sql.push(format!(" AND json_extract({column}, ")).push_bind(path.clone()).push(") = ");
    };
    match &filter.value {
        Value::String(s) => {
            compare(sql);
            sql.push_bind(s.clone());
        }
        Value::Number(n) => {
            compare(sql);
            match n.as_i64() {
                Some(i) => sql.push_bind(i),
                None => sql.push_bind(n.as_f64().unwrap_or(f64::NAN)),
            };
        }
        _ => {}
    }
}

/// `{"a":{"b":value}}` for the path `a.b`.
fn nest(path: &[String], value: Value) -> Value {
    path.iter().rev().fold(value, |inner, key| Value::Object(Map::from_iter([(key.clone(), inner)])))
}

/// `$."a"."b"` for the path `a.b` (keys are letters, digits, `_` and `-`: nothing to escape).
fn sqlite_path(path: &[String]) -> String {
    path.iter().fold("$".to_owned(), |mut out, key| {
        out.push_str(&format!(".\"{key}\""));
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn postgres(term: &str) -> String {
        let mut sql = QueryBuilder::<sqlx::Postgres>::new("");
        push_content(&ContentFilter::parse_term(term).unwrap(), &mut sql);
        sql.sql().to_owned()
    }

    fn sqlite(term: &str) -> String {
        let mut sql = QueryBuilder::<sqlx::Sqlite>::new("");
        push_content(&ContentFilter::parse_term(term).unwrap(), &mut sql);
        sql.sql().to_owned()
    }

    #[test]
    fn postgres_compares_by_containment_and_sqlite_by_type_then_value() {
        assert_eq!(postgres("input.a.b=42"), " AND instances.input @> CAST($1 AS jsonb)");
        assert_eq!(nest(&["a".into(), "b".into()], Value::from(42)).to_string(), r#"{"a":{"b":42}}"#);
        assert_eq!(
            sqlite("input.a=42"),
            " AND json_type(instances.input, ?) IN ('integer', 'real') AND json_extract(instances.input, ?) = ?"
        );
        assert_eq!(sqlite("input.a=true"), " AND json_type(instances.input, ?) IN ('true')");
        assert!(postgres("output.fetch=1").contains("n.output = CAST($2 AS jsonb))"));
        assert_eq!(sqlite_path(&["a".into(), "b-c".into()]), r#"$."a"."b-c""#);
    }
}
