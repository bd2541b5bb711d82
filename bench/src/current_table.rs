//! The table of current figures that opens BENCHMARKS.md. A run rewrites the cells of the
//! figures it measured and keeps every other one, so the table holds the newest measurement
//! of each figure, with the run that took it, however the runs were split (`--only`,
//! `--backend`). Rows are keyed by the figure's name, as the bench prints it.

use crate::scenarios::Figures;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub const START: &str = "<!-- current-figures:start -->";
pub const END: &str = "<!-- current-figures:end -->";
/// The databases' columns, in the order of the history's tables.
const BACKENDS: [&str; 2] = ["postgres", "sqlite"];
/// A cell no run has measured (the Postgres-only and SQLite-only figures).
const UNMEASURED: &str = "—";

/// A measured value as the table shows it, and the run that measured it.
#[derive(Clone, Debug, PartialEq)]
struct Cell {
    value: String,
    run: String,
}

type Row = [Option<Cell>; 2];

/// `text` with the table between the markers rebuilt: each figure measured in `results` (by
/// backend) takes its value and `run`; every other cell keeps its value and its run.
pub fn rewrite(text: &str, results: &BTreeMap<&str, Figures>, run: &str) -> Result<String> {
    let (head, rest) = text.split_once(START).with_context(|| format!("BENCHMARKS.md has no `{START}` line"))?;
    let (table, tail) =
        rest.split_once(END).with_context(|| format!("BENCHMARKS.md has no `{END}` after `{START}`"))?;
    let mut rows = parse(table)?;
    for (column, backend) in BACKENDS.iter().enumerate() {
        for (figure, value) in results.get(backend).into_iter().flatten() {
            // The precision of the table the bench prints.
            let cell = Cell { value: format!("{value:.2}"), run: run.to_owned() };
            rows.entry(figure.clone()).or_default()[column] = Some(cell);
        }
    }
    Ok(format!("{head}{START}\n{}{END}{tail}", render(&rows)))
}

/// The rows between the markers; the header and its rule are skipped (they are written anew).
fn parse(table: &str) -> Result<BTreeMap<String, Row>> {
    let mut rows = BTreeMap::new();
    for line in table.lines().map(str::trim).filter(|line| line.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [figure, postgres, sqlite, run] = cells[..] else {
            bail!("a row of the current figures is not `| figure | postgres | sqlite | run |`: {line}");
        };
        if figure == "figure" || figure.starts_with("---") {
            continue;
        }
        let runs = split_runs(run);
        let cell = |value: &str, run: &String| {
            (value != UNMEASURED).then(|| Cell { value: value.to_owned(), run: run.clone() })
        };
        rows.insert(figure.to_owned(), [cell(postgres, &runs[0]), cell(sqlite, &runs[1])]);
    }
    Ok(rows)
}

/// A row's run column: one run for both cells, or `postgres RUN; sqlite RUN` when they differ.
fn split_runs(run: &str) -> [String; 2] {
    let mut runs = [run.to_owned(), run.to_owned()];
    for part in run.split("; ") {
        for (column, backend) in BACKENDS.iter().enumerate() {
            if let Some(own) = part.strip_prefix(backend).and_then(|rest| rest.strip_prefix(' ')) {
                runs[column] = own.to_owned();
            }
        }
    }
    runs
}

fn run_column(row: &Row) -> String {
    let runs: Vec<(&str, &str)> =
        BACKENDS.iter().zip(row).filter_map(|(backend, cell)| Some((*backend, cell.as_ref()?.run.as_str()))).collect();
    if runs.windows(2).all(|pair| pair[0].1 == pair[1].1) {
        return runs.first().map_or_else(String::new, |(_, run)| (*run).to_owned());
    }
    runs.iter().map(|(backend, run)| format!("{backend} {run}")).collect::<Vec<_>>().join("; ")
}

fn render(rows: &BTreeMap<String, Row>) -> String {
    let mut out = String::from("| figure | postgres | sqlite | run |\n|---|---:|---:|---|\n");
    for (figure, row) in rows {
        let value = |cell: &Option<Cell>| cell.as_ref().map_or(UNMEASURED, |cell| cell.value.as_str()).to_owned();
        let _ = writeln!(out, "| {figure} | {} | {} | {} |", value(&row[0]), value(&row[1]), run_column(row));
    }
    out
}

/// BENCHMARKS.md at the project root, whichever directory the driver was started in.
pub fn path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md")
}

/// Today and the checked-out commit, `-dirty` when tracked files other than BENCHMARKS.md
/// differ from it: the figures are of the code built, which that commit alone may not be.
pub fn run_label() -> String {
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git").args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output();
        output.ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let changes = git(&["status", "--porcelain", "--untracked-files=no", "--", "..", ":(exclude,top)BENCHMARKS.md"]);
    let dirty = if changes.is_some_and(|c| !c.is_empty()) { "-dirty" } else { "" };
    format!("{} `{commit}{dirty}`", chrono::Utc::now().format("%Y-%m-%d"))
}

/// Rewrites the table in BENCHMARKS.md with this run's figures.
pub fn write(results: &BTreeMap<&str, Figures>, run: &str) -> Result<PathBuf> {
    let path = path();
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    std::fs::write(&path, rewrite(&text, results, run)?).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "# Benchmarks\n\n<!-- current-figures:start -->\n\
        | figure | postgres | sqlite | run |\n|---|---:|---:|---|\n\
        | fanout100_p50_ms | 42.13 | 21.53 | 2026-11-27 `8ba5e28` |\n\
        | scale_ratio_2_over_1 | 1.01 | — | 2026-11-25 `ad80f43` |\n\
        | transition_p50_ms | 0.93 | 0.73 | 2026-11-27 `8ba5e28` |\n\
        <!-- current-figures:end -->\n\n## History\n";

    fn results(backends: &[(&'static str, &[(&str, f64)])]) -> BTreeMap<&'static str, Figures> {
        let figures = |pairs: &[(&str, f64)]| pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        backends.iter().map(|(backend, pairs)| (*backend, figures(pairs))).collect()
    }

    #[test]
    fn measured_rows_are_replaced_and_the_rest_kept() {
        let run = "2026-12-01 `abc1234`";
        let results = results(&[
            ("postgres", &[("transition_p50_ms", 0.81), ("drain_1000_instances_per_s", 250.0)]),
            ("sqlite", &[("transition_p50_ms", 0.5), ("drain_1000_instances_per_s", 300.0)]),
        ]);
        let after = rewrite(BEFORE, &results, run).unwrap();
        assert!(after.contains("| transition_p50_ms | 0.81 | 0.50 | 2026-12-01 `abc1234` |"), "{after}");
        assert!(after.contains("| fanout100_p50_ms | 42.13 | 21.53 | 2026-11-27 `8ba5e28` |"), "{after}");
        assert!(after.contains("| scale_ratio_2_over_1 | 1.01 | — | 2026-11-25 `ad80f43` |"), "{after}");
        // A new figure takes its place in name order; the text around the table is untouched.
        let new = after.find("| drain_1000_instances_per_s | 250.00 | 300.00 |").unwrap();
        assert!(new < after.find("| fanout100_p50_ms").unwrap());
        assert!(after.starts_with("# Benchmarks\n\n<!-- current-figures:start -->\n| figure |"));
        assert!(after.ends_with("|\n<!-- current-figures:end -->\n\n## History\n"));
    }

    #[test]
    fn a_backend_not_measured_keeps_its_cell_and_its_run() {
        let results = results(&[("postgres", &[("transition_p50_ms", 1.0)])]);
        let after = rewrite(BEFORE, &results, "2026-12-01 `abc1234`").unwrap();
        let row = "| transition_p50_ms | 1.00 | 0.73 | postgres 2026-12-01 `abc1234`; sqlite 2026-11-27 `8ba5e28` |";
        assert!(after.contains(row), "{after}");
        // Read back, the split run column keeps each cell's run.
        let again = rewrite(&after, &BTreeMap::new(), "unused").unwrap();
        assert_eq!(again, after);
        let sqlite = results_of("sqlite", "transition_p50_ms", 0.7);
        let both = rewrite(&after, &sqlite, "2026-12-01 `abc1234`").unwrap();
        assert!(both.contains("| transition_p50_ms | 1.00 | 0.70 | 2026-12-01 `abc1234` |"), "{both}");
    }

    fn results_of(backend: &'static str, figure: &str, value: f64) -> BTreeMap<&'static str, Figures> {
        results(&[(backend, &[(figure, value)])])
    }

    #[test]
    fn missing_markers_are_an_error_naming_them() {
        let results = results_of("sqlite", "transition_p50_ms", 0.5);
        let error = rewrite("# Benchmarks\n", &results, "run").unwrap_err().to_string();
        assert!(error.contains(START), "{error}");
        let error = rewrite(&format!("{START}\n| figure | postgres | sqlite | run |\n"), &results, "run").unwrap_err();
        assert!(error.to_string().contains(END), "{error}");
    }

    #[test]
    fn the_table_in_benchmarks_md_reads_back_unchanged() {
        // A hand edit the bench could not read back would fail the next full run, hours in.
        let text = include_str!("../../BENCHMARKS.md");
        assert_eq!(rewrite(text, &BTreeMap::new(), "unused").unwrap(), text);
    }

    #[test]
    fn a_malformed_row_is_an_error() {
        let text = format!("{START}\n| transition_p50_ms | 0.93 |\n{END}\n");
        assert!(rewrite(&text, &BTreeMap::new(), "run").is_err());
    }
}
