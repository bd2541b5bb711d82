//! `GET /instances/export`: every instance the list's filters match, as JSON lines or CSV,
//! streamed in constant memory.
//!
//! The body is made page by page (newest first, a keyset cursor on the id), in chunks of about
//! 256 KiB, the next chunk made only when the client has taken the last one: a slow reader slows
//! the export, never fills memory. A client that goes away drops the stream, and with it the next
//! read; nothing is logged for it. What is exported is what is stored: node outputs and errors
//! are stored with every secret the node used already redacted (`engine::results::sanitized`),
//! and an instance's output is made of its nodes' outputs.
//!
//! CSV is for spreadsheets, which run a cell starting with `=`, `+`, `-` or `@` (and, in some,
//! a tab or carriage return) as a formula: an input or error text chosen by whoever started or
//! failed a run could then execute in an operator's spreadsheet (CSV injection). So every CSV cell
//! starting with one of those gets a `'` in front (OWASP's advice), which spreadsheets show as
//! text; such a cell's exact value is the text after that `'`. JSON lines are exact, never
//! altered.

use super::list_query::{ContentParams, ListFilters, ListQuery, QueryHead};
use super::summary;
use crate::http::middleware::authed::{AsViewer, Authed};
use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::middleware::extract::page_limit;
use crate::http::AppState;
use crate::store::{DynStore, InstanceQuery, InstanceRow};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use futures_util::stream::{self, Stream};
use serde::Deserialize;
use std::collections::HashMap;
use trellis_model::api::{ExportedInstance, Problem, EXPORT_CSV_COLUMNS};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

/// Instances per database read: one page is in memory at a time.
const EXPORT_PAGE: i64 = 100;
/// The most rows one export's `limit` may ask for (absent, there is no bound).
const MAX_EXPORT_ROWS: i64 = 10_000_000;
/// A chunk of the body is sent once it holds this much (one row may take it past).
const CHUNK_BYTES: usize = 256 * 1024;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(export))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Jsonl,
    Csv,
}

impl Format {
    fn parse(text: Option<&str>) -> ApiResult<Format> {
        match text {
            Some("jsonl") => Ok(Format::Jsonl),
            Some("csv") => Ok(Format::Csv),
            other => {
                let given =
                    other.map_or("nothing".to_owned(), |f| format!("`{}`", f.chars().take(40).collect::<String>()));
                let issue = trellis_model::Issue::new("invalid_format", "use `jsonl` or `csv`").path("format");
                Err(ApiError::invalid(format!("`format` must be `jsonl` or `csv`, not {given}"), vec![issue]))
            }
        }
    }

    fn media_type(self) -> &'static str {
        match self {
            Format::Jsonl => "application/x-ndjson",
            Format::Csv => "text/csv; charset=utf-8",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Csv => "csv",
        }
    }
}

#[utoipa::path(
    get,
    path = "/instances/export",
    operation_id = "exportInstances",
    tag = "instances",
    params(ExportHead, ListFilters, ContentParams),
    responses(
        (
            status = 200,
            description = "Every matching instance, newest first, as an attachment: JSON lines (one \
                           `ExportedInstance` per line) or CSV (a header row: id, workflow_id, workflow_name, \
                           version, status, key, created_at, started_at, ended_at, error, input, output; input and \
                           output as JSON text)",
            content(
                (String = "application/x-ndjson"),
                (String = "text/csv"),
            )
        ),
        (status = 400, description = "`limit` below 1 or above 10,000,000, or `cursor` not an instance id", body = Problem),
        (status = 422, description = "`format` is neither `jsonl` nor `csv`, or a filter is malformed", body = Problem),
    )
)]
async fn export(
    State(state): State<AppState>,
    _: Authed<AsViewer>,
    ListQuery { head, filters, content }: ListQuery<ExportHead>,
) -> ApiResult<Response> {
    let format = Format::parse(head.format.as_deref())?;
    let most = head.limit.map(|n| page_limit(Some(n), n, MAX_EXPORT_ROWS)).transpose()?;
    let mut query = filters.into_query(content)?;
    query.limit = EXPORT_PAGE;
    query.before = head.cursor;
    let filename = format!("instances-{}.{}", Utc::now().format("%Y%m%dT%H%M%SZ"), format.extension());
    let headers = [
        (header::CONTENT_TYPE, format.media_type().to_owned()),
        (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{filename}\"")),
        (header::CACHE_CONTROL, "no-store".to_owned()),
    ];
    let left = most.map_or(u64::MAX, |n| n as u64);
    Ok((headers, Body::from_stream(pages(state.store.clone(), query, format, left))).into_response())
}

/// The export's own parameters; every other one is a filter, read exactly as the list reads it
/// (`ListFilters` and the content filters), so the two cannot take different filters.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ExportHead {
    /// `jsonl` or `csv`.
    #[param(required = true)]
    format: Option<String>,
    /// Start after this instance, as the list's next page does (its `next_cursor`).
    cursor: Option<Uuid>,
    /// At most this many instances (the newest first); absent, every match.
    limit: Option<i64>,
}

impl QueryHead for ExportHead {
    const NAMES: &'static [&'static str] = &["format", "cursor", "limit"];
}

/// Where the export is: the next page's cursor, the rows of the page read but not yet sent,
/// and the workflow names seen so far.
struct Cursor {
    store: DynStore,
    query: InstanceQuery,
    format: Format,
    names: HashMap<Uuid, String>,
    pending: std::vec::IntoIter<InstanceRow>,
    /// Rows still to send (`limit`), else `u64::MAX`.
    left: u64,
    header_sent: bool,
    /// The last page has been read.
    read_all: bool,
}

/// The body in chunks of about [`CHUNK_BYTES`]: a page of rows is read when the last one is
/// sent, and each row is moved into its chunk, so memory holds one page and one chunk whatever
/// the export's length or its rows' size. A database error ends it (the client sees a cut
/// transfer).
fn pages(
    store: DynStore,
    query: InstanceQuery,
    format: Format,
    left: u64,
) -> impl Stream<Item = Result<Bytes, ApiError>> {
    let (pending, names) = (Vec::new().into_iter(), HashMap::new());
    let start = Cursor { store, query, format, names, pending, left, header_sent: false, read_all: false };
    stream::try_unfold(start, |mut at| async move {
        let mut chunk = Vec::new();
        if at.format == Format::Csv && !at.header_sent {
            at.header_sent = true;
            write_csv(&mut chunk, EXPORT_CSV_COLUMNS.iter().map(|c| c.to_string()));
        }
        while chunk.len() < CHUNK_BYTES {
            let Some(row) = next_row(&mut at).await? else { break };
            let line = ExportedInstance {
                summary: summary(&row, at.names.get(&row.workflow_id).cloned()),
                input: row.input.0,
                output: row.output.map(|o| o.0),
            };
            render(at.format, &line, &mut chunk)?;
        }
        Ok((!chunk.is_empty()).then(|| (Bytes::from(chunk), at)))
    })
}

/// The next row to send, reading the next page when the last is sent; `None` at the end.
async fn next_row(at: &mut Cursor) -> ApiResult<Option<InstanceRow>> {
    if at.left == 0 {
        return Ok(None);
    }
    at.left -= 1;
    if at.pending.len() == 0 && !at.read_all {
        let rows = at.store.list_instances(&at.query).await.inspect_err(|e| {
            tracing::warn!(error = %e, "the instances export stopped: the database failed");
        })?;
        at.read_all = (rows.len() as i64) < at.query.limit;
        at.query.before = rows.last().map(|r| r.id);
        learn_names(&at.store, &rows, &mut at.names).await?;
        at.pending = rows.into_iter();
    }
    Ok(at.pending.next())
}

/// Adds the names of the workflows of `rows` not known yet (few: one read per new workflow set).
async fn learn_names(store: &DynStore, rows: &[InstanceRow], names: &mut HashMap<Uuid, String>) -> ApiResult<()> {
    let mut missing: Vec<Uuid> = rows.iter().map(|r| r.workflow_id).filter(|w| !names.contains_key(w)).collect();
    missing.sort_unstable();
    missing.dedup();
    if !missing.is_empty() {
        names.extend(store.workflow_names(&missing).await?);
    }
    Ok(())
}

fn render(format: Format, line: &ExportedInstance, out: &mut Vec<u8>) -> ApiResult<()> {
    match format {
        Format::Jsonl => {
            serde_json::to_writer(&mut *out, line).map_err(|e| ApiError::Internal(e.into()))?;
            out.push(b'\n');
            Ok(())
        }
        Format::Csv => {
            write_csv(out, csv_row(line));
            Ok(())
        }
    }
}

/// The CSV fields of `line`, in `EXPORT_CSV_COLUMNS` order, each [`inert`]; absent values are
/// empty.
fn csv_row(line: &ExportedInstance) -> impl Iterator<Item = String> {
    let s = &line.summary;
    let time = |t: Option<DateTime<Utc>>| t.map(|t| t.to_rfc3339()).unwrap_or_default();
    [
        s.id.clone(),
        s.workflow_id.clone(),
        s.workflow_name.clone().unwrap_or_default(),
        s.version.to_string(),
        s.status.as_str().to_owned(),
        s.key.clone().unwrap_or_default(),
        s.created_at.to_rfc3339(),
        time(s.started_at),
        time(s.ended_at),
        s.error.clone().unwrap_or_default(),
        line.input.to_string(),
        line.output.as_ref().map(|o| o.to_string()).unwrap_or_default(),
    ]
    .into_iter()
    .map(inert)
}

/// `cell`, with a `'` in front if a spreadsheet would take it for a formula (see the module's
/// comment): it starts with `=`, `+`, `-`, `@`, a tab or a carriage return.
fn inert(cell: String) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell
    }
}

/// One CSV record, appended to `out`: fields separated by `,`, each quoted (RFC 4180, `"`
/// doubled) when it holds anything a reader could split on or misread — `,`, `"`, a line
/// break, and also `;` and tab, the field separators of spreadsheets in most European locales:
/// unquoted, `k;=2+2` would be two cells there, the second a formula.
fn write_csv(out: &mut Vec<u8>, fields: impl Iterator<Item = String>) {
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if field.contains([',', ';', '"', '\t', '\r', '\n']) {
            out.push(b'"');
            out.extend_from_slice(field.replace('"', "\"\"").as_bytes());
            out.push(b'"');
        } else {
            out.extend_from_slice(field.as_bytes());
        }
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_with_commas_quotes_and_newlines_are_quoted() {
        let mut out = Vec::new();
        let fields = ["a,b", "say \"hi\"", "two\nlines", "plain", "k;=2+2", "tab\there", "cr\r"];
        write_csv(&mut out, fields.into_iter().map(str::to_owned));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",plain,\"k;=2+2\",\"tab\there\",\"cr\r\"\n"
        );
    }

    #[test]
    fn csv_cells_a_spreadsheet_would_run_start_with_a_quote_and_jsonl_is_exact() {
        for formula in ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\r=1"] {
            assert_eq!(inert(formula.to_owned()), format!("'{formula}"));
        }
        for plain in ["acme", "", "1-2", " =1", "'=1", "{\"a\":\"=1\"}", "\"=1\""] {
            assert_eq!(inert(plain.to_owned()), plain);
        }
        let summary = trellis_model::api::InstanceSummary {
            id: Uuid::nil().to_string(),
            workflow_id: Uuid::nil().to_string(),
            workflow_name: Some("=cmd|' /C calc'!A0".to_owned()),
            version: 1,
            status: trellis_model::InstanceStatus::Failed,
            key: Some("@key".to_owned()),
            error: Some("-boom".to_owned()),
            created_at: Utc::now(),
            started_at: None,
            ended_at: None,
            started_by: None,
        };
        let line = ExportedInstance { summary, input: serde_json::json!(-5), output: None };
        let mut csv_out = Vec::new();
        render(Format::Csv, &line, &mut csv_out).unwrap();
        let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(csv_out.as_slice());
        let row = reader.records().next().unwrap().unwrap();
        assert_eq!((&row[2], &row[5], &row[9], &row[10]), ("'=cmd|' /C calc'!A0", "'@key", "'-boom", "'-5"));
        let mut jsonl_out = Vec::new();
        render(Format::Jsonl, &line, &mut jsonl_out).unwrap();
        let back: serde_json::Value = serde_json::from_slice(&jsonl_out).unwrap();
        assert_eq!(
            (&back["workflow_name"], &back["error"], &back["input"]),
            (&serde_json::json!("=cmd|' /C calc'!A0"), &serde_json::json!("-boom"), &serde_json::json!(-5))
        );
    }

    #[test]
    fn only_jsonl_and_csv_are_formats() {
        assert_eq!(Format::parse(Some("csv")).unwrap(), Format::Csv);
        assert!(matches!(Format::parse(Some("xml")), Err(ApiError::Unprocessable { .. })));
        assert!(Format::parse(None).is_err());
    }
}
