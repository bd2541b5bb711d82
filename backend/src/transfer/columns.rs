//! What a column holds, read from the Postgres side's catalog (the SQLite side declares only
//! storage classes), and each row in one canonical JSON form both sides are read into and
//! written from: uuids hyphenated, times in UTC to the microsecond (Postgres keeps no more),
//! booleans as booleans, JSON as JSON, bytes as `\x` hex. A table's digest is the wrapping sum
//! of its canonical rows' SHA-256 prefixes, so both sides digest their rows in any order.

use anyhow::{bail, Result};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// One row, keyed by column name.
pub type Row = Map<String, Value>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Uuid,
    Time,
    Bool,
    Int,
    Float,
    Text,
    Json,
    Bytes,
}

impl Kind {
    /// The kind of a Postgres column, by `format_type`.
    pub fn of_postgres(table: &str, column: &str, pg_type: &str) -> Result<Kind> {
        Ok(match pg_type {
            "uuid" => Kind::Uuid,
            "timestamp with time zone" => Kind::Time,
            "boolean" => Kind::Bool,
            "bigint" | "integer" | "smallint" => Kind::Int,
            "double precision" | "real" => Kind::Float,
            "json" | "jsonb" => Kind::Json,
            "bytea" => Kind::Bytes,
            t if t == "text" || t.starts_with("character varying") => Kind::Text,
            other => bail!("{table}.{column} is of type {other}, which transfer cannot carry"),
        })
    }
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
    /// The SQLite side declares it TEXT: a uuid is kept there hyphenated, not as 16 bytes.
    pub sqlite_text: bool,
    /// NOT NULL: a JSON column's `null` is then the JSON value, never SQL NULL.
    pub not_null: bool,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub columns: Vec<Column>,
}

/// A time in its canonical text.
pub fn time_text(at: DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

pub fn bytes_text(bytes: &[u8]) -> String {
    format!("\\x{}", crate::digest::hex(bytes))
}

/// `value` as the canonical form of `kind` (Postgres's `row_to_json` writes most already).
pub fn canonical(kind: Kind, value: Value) -> Result<Value> {
    Ok(match (kind, value) {
        (_, Value::Null) => Value::Null,
        (Kind::Time, Value::String(text)) => {
            let at = DateTime::parse_from_rfc3339(&text)
                .map_err(|e| anyhow::anyhow!("`{text}` is not a time: {e}"))?
                .with_timezone(&Utc);
            Value::String(time_text(at))
        }
        (Kind::Uuid, Value::String(text)) => Value::String(uuid::Uuid::parse_str(&text)?.hyphenated().to_string()),
        (_, other) => other,
    })
}

/// Counts and digests canonical rows, in any order.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub rows: u64,
    sum: u128,
}

impl Tally {
    /// Counts `row`; returns the size of its canonical text (batches are capped by it).
    pub fn add(&mut self, row: &Row) -> usize {
        // serde_json's maps keep keys sorted, so equal rows serialize equally.
        let text = serde_json::to_vec(row).expect("a JSON map serializes");
        let hash = Sha256::digest(&text);
        let prefix: [u8; 16] = hash[..16].try_into().expect("16 bytes");
        self.sum = self.sum.wrapping_add(u128::from_be_bytes(prefix));
        self.rows += 1;
        text.len()
    }

    pub fn digest(&self) -> String {
        format!("{:032x}", self.sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_digest_alike_whatever_their_order_and_key_order() {
        let row = |v: Value| v.as_object().unwrap().clone();
        let (mut one, mut two) = (Tally::default(), Tally::default());
        one.add(&row(json!({"b": 1, "a": "x"})));
        one.add(&row(json!({"a": "y", "b": 2})));
        two.add(&row(json!({"b": 2, "a": "y"})));
        two.add(&row(json!({"a": "x", "b": 1})));
        assert_eq!(one, two);
        let mut changed = Tally::default();
        changed.add(&row(json!({"a": "x", "b": 1})));
        changed.add(&row(json!({"a": "y", "b": 3})));
        assert_ne!(one.digest(), changed.digest());
    }

    #[test]
    fn times_and_uuids_have_one_text() {
        let pg = canonical(Kind::Time, json!("2026-11-29T01:02:03.1234+00:00")).unwrap();
        let sqlite = canonical(Kind::Time, json!("2026-11-29T01:02:03.123400+00:00")).unwrap();
        assert_eq!(pg, json!("2026-11-29T01:02:03.123400Z"));
        assert_eq!(pg, sqlite);
        let upper = canonical(Kind::Uuid, json!("0191F0B8-0000-7000-8000-000000000001")).unwrap();
        assert_eq!(upper, json!("0191f0b8-0000-7000-8000-000000000001"));
    }
}
