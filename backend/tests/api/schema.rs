//! Schema parity: the SQLite and Postgres migrations must build the same schema — the same
//! tables, columns, nullability and named indexes (with their columns) — so a column or an
//! index added to one dialect only fails here, naming it, instead of in production.

use crate::common::{db_config, fresh_database, Backend};
use sqlx::Connection;
use std::collections::BTreeMap;

/// table → column → nullable
type Columns = BTreeMap<String, BTreeMap<String, bool>>;
/// index name → (table, columns in order)
type Indexes = BTreeMap<String, (String, Vec<String>)>;

const MIGRATIONS_TABLE: &str = "_sqlx_migrations";
/// Indexes of a kind SQLite has none of, so only Postgres has them: the GIN index behind content
/// filters on `instances.input` (SQLite's filters scan; see `store/content.rs`).
const POSTGRES_ONLY_INDEXES: [&str; 1] = ["instances_input_content"];

async fn sqlite_schema(url: &str) -> (Columns, Indexes) {
    let mut conn = sqlx::SqliteConnection::connect(url).await.unwrap();
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> $1",
    )
    .bind(MIGRATIONS_TABLE)
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let mut columns = Columns::new();
    for (table,) in tables {
        // A primary-key column is NOT NULL in Postgres whatever it declares; SQLite only
        // enforces it where declared, so count the key as not null here too.
        let rows: Vec<(String, bool, i64)> = sqlx::query_as("SELECT name, \"notnull\", pk FROM pragma_table_info($1)")
            .bind(&table)
            .fetch_all(&mut conn)
            .await
            .unwrap();
        columns.insert(table, rows.into_iter().map(|(name, not_null, pk)| (name, !(not_null || pk > 0))).collect());
    }
    let named: Vec<(String, String)> =
        sqlx::query_as("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let mut indexes = Indexes::new();
    for (name, table) in named {
        let cols: Vec<(String,)> = sqlx::query_as("SELECT name FROM pragma_index_info($1) ORDER BY seqno")
            .bind(&name)
            .fetch_all(&mut conn)
            .await
            .unwrap();
        indexes.insert(name, (table, cols.into_iter().map(|(c,)| c).collect()));
    }
    (columns, indexes)
}

async fn postgres_schema(url: &str) -> (Columns, Indexes) {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text, is_nullable::text FROM information_schema.columns \
         WHERE table_schema = 'public' AND table_name <> $1",
    )
    .bind(MIGRATIONS_TABLE)
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let mut columns = Columns::new();
    for (table, column, nullable) in rows {
        columns.entry(table).or_default().insert(column, nullable == "YES");
    }
    // Indexes created by name (not the ones behind a primary key or unique constraint, which
    // SQLite keeps as unnamed automatic indexes), with their columns in order.
    let rows: Vec<(String, String, Vec<String>)> = sqlx::query_as(
        "SELECT i.relname::text, t.relname::text, \
                ARRAY(SELECT a.attname::text FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n) \
                      JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n) \
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid \
         JOIN pg_namespace ns ON ns.oid = t.relnamespace \
         WHERE ns.nspname = 'public' AND t.relname <> $1 \
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
    )
    .bind(MIGRATIONS_TABLE)
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let indexes = rows.into_iter().map(|(name, table, cols)| (name, (table, cols))).collect();
    (columns, indexes)
}

/// Every difference between the two schemas, one line each, naming table, column or index.
fn differences(sqlite: &(Columns, Indexes), postgres: &(Columns, Indexes)) -> Vec<String> {
    let mut out = Vec::new();
    let tables: std::collections::BTreeSet<&String> = sqlite.0.keys().chain(postgres.0.keys()).collect();
    for table in tables {
        let (s, p) = (sqlite.0.get(table), postgres.0.get(table));
        let (Some(s), Some(p)) = (s, p) else {
            out.push(format!("table `{table}` exists only in {}", if s.is_some() { "SQLite" } else { "Postgres" }));
            continue;
        };
        let names: std::collections::BTreeSet<&String> = s.keys().chain(p.keys()).collect();
        for column in names {
            match (s.get(column), p.get(column)) {
                (Some(a), Some(b)) if a != b => out.push(format!(
                    "`{table}.{column}` is {} in SQLite but {} in Postgres",
                    nullability(*a),
                    nullability(*b)
                )),
                (Some(_), None) => out.push(format!("column `{table}.{column}` exists only in SQLite")),
                (None, Some(_)) => out.push(format!("column `{table}.{column}` exists only in Postgres")),
                _ => {}
            }
        }
    }
    let names: std::collections::BTreeSet<&String> = sqlite.1.keys().chain(postgres.1.keys()).collect();
    for index in names {
        if POSTGRES_ONLY_INDEXES.contains(&index.as_str()) {
            if !postgres.1.contains_key(index) {
                out.push(format!("index `{index}` is missing in Postgres"));
            }
            continue;
        }
        match (sqlite.1.get(index), postgres.1.get(index)) {
            (Some(a), Some(b)) if a != b => {
                out.push(format!("index `{index}` is {a:?} in SQLite but {b:?} in Postgres"))
            }
            (Some(_), None) => out.push(format!("index `{index}` exists only in SQLite")),
            (None, Some(_)) => out.push(format!("index `{index}` exists only in Postgres")),
            _ => {}
        }
    }
    out
}

fn nullability(nullable: bool) -> &'static str {
    if nullable {
        "nullable"
    } else {
        "NOT NULL"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_dialects_migrate_to_the_same_tables_columns_nullability_and_indexes() {
    let (sqlite_url, _dir) = fresh_database(Backend::Sqlite).await;
    let (postgres_url, _pg_dir) = fresh_database(Backend::Postgres).await;
    for url in [&sqlite_url, &postgres_url] {
        trellis::store::connect(&db_config(url)).await.expect("migrations apply");
    }
    let sqlite = sqlite_schema(&sqlite_url).await;
    let postgres = postgres_schema(&postgres_url).await;
    assert!(sqlite.0.len() > 10 && sqlite.1.len() > 5, "the schema was read: {:?}", sqlite.0.keys());
    let differences = differences(&sqlite, &postgres);
    assert!(differences.is_empty(), "the dialects' schemas differ:\n{}", differences.join("\n"));
}

#[test]
fn a_column_missing_from_one_dialect_is_named() {
    let table = |cols: &[(&str, bool)]| -> Columns {
        [("instances".to_owned(), cols.iter().map(|(c, n)| (c.to_string(), *n)).collect())].into_iter().collect()
    };
    let sqlite = (table(&[("id", false), ("note", true)]), Indexes::new());
    let postgres = (table(&[("id", true)]), Indexes::new());
    let found = differences(&sqlite, &postgres);
    assert!(found.contains(&"column `instances.note` exists only in SQLite".to_owned()), "{found:?}");
    assert!(found.contains(&"`instances.id` is NOT NULL in SQLite but nullable in Postgres".to_owned()), "{found:?}");
}
