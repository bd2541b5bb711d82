//! Printing answers: aligned columns for people (as `gh` and `kubectl` print them), the JSON
//! the server sent for scripts. The table is a few lines of padding, not a dependency: no
//! borders, no colours, nothing to wrap.

use super::say;
use chrono::{DateTime, Utc};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Aligned columns (lists) or `field: value` lines (one item)
    Table,
    /// Pretty JSON: an array for lists, an object for one item
    Json,
    /// One compact JSON value per line (a list's items, or the one item)
    Jsonl,
}

/// A list: a table with `headers` and one row per item, or the items as JSON.
pub fn list<T: Serialize>(output: Output, items: &[T], headers: &[&str], row: impl Fn(&T) -> Vec<String>) {
    match output {
        Output::Table => {
            let rows: Vec<Vec<String>> = items.iter().map(row).collect();
            for line in table(headers, &rows) {
                say!("{line}");
            }
        }
        Output::Json => say!("{}", pretty(&items)),
        Output::Jsonl => {
            for item in items {
                say!("{}", compact(item));
            }
        }
    }
}

/// One item: `field: value` lines, or the item as JSON.
pub fn one<T: Serialize>(output: Output, item: &T, fields: &[(&str, String)]) {
    match output {
        Output::Table => {
            let width = fields.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0);
            for (name, value) in fields {
                say!("{name:<width$}  {value}");
            }
        }
        Output::Json => say!("{}", pretty(item)),
        Output::Jsonl => say!("{}", compact(item)),
    }
}

/// Columns padded to their widest cell, two spaces apart, headers in capitals.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let header_row: Vec<String> = headers.iter().map(|h| h.to_uppercase()).collect();
    let mut widths: Vec<usize> = header_row.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    std::iter::once(&header_row)
        .chain(rows)
        .map(|row| {
            let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, width)| format!("{cell:<width$}")).collect();
            cells.join("  ").trim_end().to_owned()
        })
        .collect()
}

pub fn pretty<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("null // cannot render: {e}"))
}

pub fn compact<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("null // cannot render: {e}"))
}

/// A time for people: UTC to the second.
pub fn time(at: Option<DateTime<Utc>>) -> String {
    at.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_else(|| "-".to_owned())
}

/// How long something ran: `850ms`, `12.3s`, `4m05s`, `2h10m`; `-` when it has not started.
pub fn duration(start: Option<DateTime<Utc>>, end: Option<DateTime<Utc>>) -> String {
    let Some(start) = start else { return "-".to_owned() };
    let ms = (end.unwrap_or_else(Utc::now) - start).num_milliseconds().max(0);
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

/// An optional text, `-` when absent; long ones cut to `max` characters.
pub fn text(value: Option<&str>, max: usize) -> String {
    match value {
        None | Some("") => "-".to_owned(),
        Some(v) if v.chars().count() > max => format!("{}…", v.chars().take(max - 1).collect::<String>()),
        Some(v) => v.replace('\n', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_under_their_headers() {
        let rows = vec![vec!["a1".to_owned(), "running".to_owned()], vec!["b".to_owned(), "failed".to_owned()]];
        assert_eq!(table(&["id", "status"], &rows), ["ID  STATUS", "a1  running", "b   failed"]);
    }

    #[test]
    fn durations_read_at_a_glance() {
        let start = Utc::now();
        let after = |ms| Some(start + chrono::Duration::milliseconds(ms));
        assert_eq!(duration(Some(start), after(850)), "850ms");
        assert_eq!(duration(Some(start), after(12_340)), "12.3s");
        assert_eq!(duration(Some(start), after(245_000)), "4m05s");
        assert_eq!(duration(None, None), "-");
    }
}
