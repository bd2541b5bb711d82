//! Content filters (`input.<path>=<value>`, `output.<node>.<path>=<value>`) as SQL conditions
//! on `instances`, one text per dialect, every caller-given piece bound.
//!
//! - Postgres: JSON containment, `input @> '{"order":{"customer":"acme"}}'`, which compares
//!   JSON types (`42` ≠ `"42"`, `42` = `42.0`) and is served by the GIN index
//!   `instances_input_content` (migration 0021). For scalars at an object path containment is
//!   exactly equality; a path ending at an array does not match a scalar.
//! - SQLite: `json_type` at the path names the JSON type (text, integer/real, true, false,
//!   null), then `json_extract` compares the value: `json_extract` alone reads `true` as `1`
//!   and cannot tell `"42"` from a number on its own. No index serves it: SQLite scans, but
//!   a text search for the value (`instr`) first skips parsing the rows that cannot match.
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
    // A text search before the JSON is parsed: rows whose text lacks the value cannot hold it,
    // and skipping their parse is most of a scan's cost (see `stored_text`).
    if let Some(needle) = stored_text(&filter.value) {
        sql.push(format!("instr({column}, ")).push_bind(needle).push(") > 0 AND ");
    }
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

/// Text that every stored JSON holding `value` contains, when there is such a text. Inputs and
/// outputs are stored as serde_json writes them, so a string is its JSON text with the quotes
/// (the same escapes), `true`/`false`/`null` themselves, and an integer its digits: `5` is in
/// both `5` and `5.0`. Not for other numbers (`5.0` is not in `5`), nor for integers so large
/// that a stored float of the same value is written with an exponent (`1e16`).
fn stored_text(value: &Value) -> Option<String> {
    const EXACT_DIGITS_BELOW: u64 = 1_000_000_000_000_000;
    match value {
        Value::String(_) | Value::Bool(_) | Value::Null => Some(value.to_string()),
        Value::Number(n) => n.as_i64().filter(|i| i.unsigned_abs() < EXACT_DIGITS_BELOW).map(|i| i.to_string()),
        Value::Array(_) | Value::Object(_) => None,
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
    use serde_json::json;

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
            " AND instr(instances.input, ?) > 0 AND json_type(instances.input, ?) IN ('integer', 'real') AND \
             json_extract(instances.input, ?) = ?"
        );
        assert_eq!(
            sqlite("input.a=true"),
            " AND instr(instances.input, ?) > 0 AND json_type(instances.input, ?) IN ('true')"
        );
        assert!(sqlite("input.a=4.5").starts_with(" AND json_type("), "no text search for a fraction");
        assert!(postgres("output.fetch=1").contains("n.output = CAST($2 AS jsonb))"));
        assert_eq!(sqlite_path(&["a".into(), "b-c".into()]), r#"$."a"."b-c""#);
    }

    #[test]
    fn the_text_searched_for_is_in_every_stored_json_holding_the_value() {
        let stored = [r#"{"s":"a \"quoted\" é\n"}"#, r#"{"n":5}"#, r#"{"n":5.0}"#, r#"{"n":-12}"#, r#"{"b":false}"#];
        let values = [json!("a \"quoted\" é\n"), json!(5), json!(5), json!(-12), json!(false)];
        for (text, value) in stored.iter().zip(values) {
            let parsed: Value = serde_json::from_str(text).unwrap();
            assert_eq!(parsed.to_string(), *text, "stored as serde_json writes it");
            assert!(text.contains(&stored_text(&value).unwrap()), "{text} holds {value}");
        }
        assert_eq!(stored_text(&json!(5.5)), None);
        assert_eq!(stored_text(&json!(10_000_000_000_000_000i64)), None);
        assert_eq!(stored_text(&json!({"a": 1})), None);
    }
}
