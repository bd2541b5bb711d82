//! The instance list's filters, shared by `instance list` and the bulk actions: checked
//! here as the server checks them, so a wrong value is a usage error (exit 2) before any
//! request, and times read either as RFC 3339 or as "that long ago" (`--since 1h`).

use super::api::Api;
use super::failure::CliResult;
use super::workflows;
use chrono::{DateTime, Utc};
use clap::builder::PossibleValuesParser;
use clap::Args;
use trellis_model::api::ContentFilter;
use trellis_model::InstanceStatus;

/// The instance list's filters, shared by `list` and the bulk actions.
#[derive(Debug, Clone, Default, Args)]
pub struct ListFilter {
    /// A workflow's id or exact name
    #[arg(long, short = 'w')]
    pub workflow: Option<String>,
    /// Any of these statuses (repeat, or separate with commas)
    #[arg(long, short = 's', value_delimiter = ',', value_parser = statuses())]
    pub status: Vec<String>,
    /// Instances of this published version
    #[arg(long)]
    pub version: Option<i64>,
    /// Created at or after this time: RFC 3339 (2026-11-25T00:00:00Z) or that long ago
    /// (30s, 15m, 1h, 2d, 1w)
    #[arg(long, value_name = "TIME", value_parser = moment)]
    pub since: Option<DateTime<Utc>>,
    /// Created before this time: RFC 3339 or that long ago (as --since)
    #[arg(long, value_name = "TIME", value_parser = moment)]
    pub until: Option<DateTime<Utc>>,
    /// With this business key
    #[arg(long)]
    pub key: Option<String>,
    /// Failed at this node
    #[arg(long)]
    pub node: Option<String>,
    /// Failed with this error class
    #[arg(long)]
    pub error_class: Option<String>,
    /// By content (repeat: all must hold): `input.<path>=<value>` or
    /// `output.<node id>.<path>=<value>`, e.g. `--where input.customer=acme --where
    /// input.order.total=42`; a value that parses as JSON compares as JSON (`42` ≠ `'"42"'`)
    #[arg(long = "where", value_name = "PATH=VALUE", value_parser = content_filter)]
    pub content: Vec<ContentFilter>,
    /// Only running instances with a node running past its slow threshold (its
    /// `stuck_after_ms`, or k× its recent p95) now
    #[arg(long)]
    pub slow: bool,
}

/// The statuses an instance can have, as the server names them.
fn statuses() -> PossibleValuesParser {
    PossibleValuesParser::new(InstanceStatus::ALL.iter().map(|status| status.as_str()))
}

/// A point in time: RFC 3339, or a span before now such as `1h`.
fn moment(text: &str) -> Result<DateTime<Utc>, String> {
    moment_before(text, Utc::now())
}

/// `text` as a time, a relative one counted back from `now`.
fn moment_before(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&Utc));
    }
    let unknown =
        || format!("`{text}` is neither RFC 3339 (2026-11-25T00:00:00Z) nor a span such as 30m, 1h, 2d or 1w");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(unknown)?;
    let (number, unit) = text.split_at(split);
    let count: i64 = number.parse().map_err(|_| unknown())?;
    let span = match unit {
        "s" => chrono::TimeDelta::try_seconds(count),
        "m" => chrono::TimeDelta::try_minutes(count),
        "h" => chrono::TimeDelta::try_hours(count),
        "d" => chrono::TimeDelta::try_days(count),
        "w" => chrono::TimeDelta::try_weeks(count),
        _ => return Err(unknown()),
    };
    span.and_then(|span| now.checked_sub_signed(span)).ok_or_else(|| format!("`{text}` reaches back too far"))
}

/// A `--where` term, checked as the server checks it.
fn content_filter(text: &str) -> Result<ContentFilter, String> {
    ContentFilter::parse_term(text)
}

impl ListFilter {
    /// The filter as the list's query string; a workflow name is looked up first.
    pub async fn query(&self, api: &Api) -> CliResult<Vec<(String, String)>> {
        let mut query = Vec::new();
        if let Some(workflow) = &self.workflow {
            query.push(("workflow".to_owned(), workflows::resolve(api, workflow).await?.id));
        }
        for status in &self.status {
            query.push(("status".to_owned(), status.clone()));
        }
        let optional = [
            ("version", self.version.map(|v| v.to_string())),
            ("since", self.since.map(|t| t.to_rfc3339())),
            ("until", self.until.map(|t| t.to_rfc3339())),
            ("key", self.key.clone()),
            ("node", self.node.clone()),
            ("error_class", self.error_class.clone()),
        ];
        query.extend(optional.into_iter().filter_map(|(name, value)| value.map(|v| (name.to_owned(), v))));
        query.extend(self.content.iter().map(|f| (f.name(), f.text())));
        if self.slow {
            query.push(("slow".to_owned(), "true".to_owned()));
        }
        Ok(query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc_3339_or_a_span_before_now() {
        let now = DateTime::parse_from_rfc3339("2026-11-25T12:00:00Z").unwrap().with_timezone(&Utc);
        let at = |text| moment_before(text, now).map(|t| t.to_rfc3339());
        assert_eq!(at("2026-11-24T00:00:00+01:00").unwrap(), "2026-11-23T23:00:00+00:00");
        assert_eq!(at("45s").unwrap(), "2026-11-25T11:59:15+00:00");
        assert_eq!(at("30m").unwrap(), "2026-11-25T11:30:00+00:00");
        assert_eq!(at("1h").unwrap(), "2026-11-25T11:00:00+00:00");
        assert_eq!(at("2d").unwrap(), "2026-11-23T12:00:00+00:00");
        assert_eq!(at("1w").unwrap(), "2026-11-18T12:00:00+00:00");
        for wrong in ["", "h", "1", "1y", "-1h", "1.5h", "yesterday", "99999999999999999999d"] {
            assert!(at(wrong).is_err(), "{wrong}");
        }
    }
}
