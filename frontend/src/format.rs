//! How values read on screen. Plain functions so native tests cover them without a browser.

use chrono::{DateTime, Utc};

/// The "Latest version" cell: `v3`, or an em dash for a workflow never published.
pub fn version_label(latest: Option<i64>) -> String {
    match latest {
        Some(n) => format!("v{n}"),
        None => "—".to_owned(),
    }
}

/// Stands for the draft on screen where a version number is expected (versions start at 1).
pub const DRAFT: i64 = 0;

/// How a version, or the draft, is named in the designer: `v3`, `the draft`.
pub fn version_name(n: i64) -> String {
    if n == DRAFT {
        "the draft".to_owned()
    } else {
        format!("v{n}")
    }
}

/// A timestamp people can scan in a table: minutes precision, always UTC so every operator reading
/// the same screen (or a screenshot of it) sees the same value.
pub fn timestamp(at: &DateTime<Utc>) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// The exact instant, for `<time datetime>` and tooltips.
pub fn rfc3339(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A name typed into a form, or `None` when there is nothing but whitespace to submit.
pub fn entered_name(raw: &str) -> Option<String> {
    let name = raw.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// How long a run took (`1.2 s`, `3 min 4 s`), or an em dash when it has not started or ended.
pub fn run_duration(started: Option<DateTime<Utc>>, ended: Option<DateTime<Utc>>) -> String {
    let (Some(start), Some(end)) = (started, ended) else { return "—".to_owned() };
    let ms = (end - start).num_milliseconds().max(0);
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// What the empty workflow list says, depending on whether a search filtered everything out.
pub fn no_workflows(search: &str) -> String {
    match search.trim() {
        "" => "No workflows yet. Create the first one above.".to_owned(),
        q => format!("No workflows match “{q}”."),
    }
}

/// `text` cut to `max` characters with an ellipsis: a table cell shows the start of a value
/// whose whole (the node's drawer) may be megabytes.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The first `n` lines of `text`, and a last line saying how many more there are.
pub fn first_lines(text: &str, n: usize) -> String {
    let total = text.lines().count();
    let mut out: Vec<&str> = text.lines().take(n).collect();
    let rest = total.saturating_sub(n);
    let more = format!("… {rest} more lines");
    if rest > 0 {
        out.push(&more);
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn unpublished_workflows_show_a_dash() {
        assert_eq!(version_label(None), "—");
        assert_eq!(version_label(Some(3)), "v3");
    }

    #[test]
    fn versions_and_the_draft_have_names() {
        assert_eq!(version_name(2), "v2");
        assert_eq!(version_name(DRAFT), "the draft");
    }

    #[test]
    fn timestamps_are_shown_in_utc_to_the_minute() {
        assert_eq!(timestamp(&at("2025-03-04T05:06:07.891Z")), "2025-03-04 05:06 UTC");
        assert_eq!(timestamp(&at("2025-03-04T23:30:00-02:00")), "2025-03-05 01:30 UTC");
    }

    #[test]
    fn rfc3339_keeps_the_seconds() {
        assert_eq!(rfc3339(&at("2025-03-04T05:06:07.891Z")), "2025-03-04T05:06:07Z");
    }

    #[test]
    fn blank_names_are_not_submitted() {
        assert_eq!(entered_name("   "), None);
        assert_eq!(entered_name("  Orders "), Some("Orders".to_owned()));
        assert_eq!(entered_name("<b>x</b> '; DROP"), Some("<b>x</b> '; DROP".to_owned()));
    }

    #[test]
    fn durations_read_at_a_glance() {
        let t = at("2025-03-04T05:06:07Z");
        assert_eq!(run_duration(Some(t), None), "—");
        assert_eq!(run_duration(Some(t), Some(t + chrono::Duration::milliseconds(42))), "42 ms");
        assert_eq!(run_duration(Some(t), Some(t + chrono::Duration::milliseconds(1250))), "1.2 s");
        assert_eq!(run_duration(Some(t), Some(t + chrono::Duration::seconds(184))), "3 min 4 s");
    }

    #[test]
    fn the_empty_workflow_list_mentions_the_search() {
        assert!(no_workflows("").starts_with("No workflows yet"));
        assert_eq!(no_workflows(" <b> "), "No workflows match “<b>”.");
    }

    #[test]
    fn long_text_is_cut_at_a_character() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc…");
        assert_eq!(cut("ééé", 2), "éé…");
    }

    #[test]
    fn a_long_text_shows_its_first_lines_and_says_how_many_more() {
        assert_eq!(first_lines("a\nb", 5), "a\nb");
        assert_eq!(first_lines("a\nb\nc\nd", 2), "a\nb\n… 2 more lines");
    }
}
