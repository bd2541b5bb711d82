//! The instances list's filter as the address holds it
//! (`/instances?workflow=&status=failed,timed_out&version=&key=&since=&until=&input.customer=acme`),
//! so a filtered view is a link one can share. Parsing never fails: a value that cannot be used is
//! dropped and named in a warning, and the list shows without it.

use chrono::{DateTime, NaiveDateTime, Utc};
use trellis_model::api::{read_statuses, ContentFilter, MAX_CONTENT_FILTERS};
use trellis_model::InstanceStatus;

use crate::urls::encode_component;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct InstanceFilter {
    pub workflow: Option<String>,
    /// Any of these; empty for any status. Kept in `InstanceStatus::ALL` order, so one set has
    /// one address.
    pub status: Vec<InstanceStatus>,
    pub version: Option<i64>,
    pub key: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Failed at this node, with this error class: a failure group opened as a list.
    pub node: Option<String>,
    pub error_class: Option<String>,
    /// By content (`input.customer=acme`, `output.fetch.status=200`): all must hold. One per
    /// name; in the order added.
    pub content: Vec<ContentFilter>,
    /// Only running instances with a node past its slow threshold now.
    pub slow: bool,
}

/// A filter read from the address, and what in it was ignored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    pub filter: InstanceFilter,
    pub warnings: Vec<String>,
}

impl InstanceFilter {
    /// Reads the filter from the query's `(name, value)` pairs; unknown names are ignored too.
    pub fn parse<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Parsed {
        let mut parsed = Parsed::default();
        for (name, raw) in pairs {
            let value = raw.trim();
            if value.is_empty() {
                continue;
            }
            let f = &mut parsed.filter;
            let ok = match name {
                "workflow" => set(&mut f.workflow, is_uuid(value).then(|| value.to_ascii_lowercase())),
                "status" => {
                    let (known, unknown) = read_statuses(&[value.to_owned()]);
                    f.status = sorted(f.status.iter().copied().chain(known));
                    parsed.warnings.extend(unknown.iter().map(|u| warning(name, u)));
                    true
                }
                "version" => set(&mut f.version, value.parse().ok().filter(|n| *n >= 1)),
                "key" => set(&mut f.key, Some(value.to_owned())),
                "node" => set(&mut f.node, Some(value.to_owned())),
                "error_class" => set(&mut f.error_class, Some(raw.to_owned())),
                "slow" => {
                    f.slow = value == "true";
                    value == "true" || value == "false"
                }
                "since" => set(&mut f.since, parse_time(value)),
                "until" => set(&mut f.until, parse_time(value)),
                _ if ContentFilter::is_content_name(name) => match ContentFilter::parse(name, raw) {
                    Ok(content) => f.with_content(content).is_ok(),
                    Err(why) => {
                        parsed.warnings.push(format!("Ignored content filter {why}."));
                        true
                    }
                },
                _ => true,
            };
            if !ok {
                parsed.warnings.push(warning(name, value));
            }
        }
        parsed
    }

    pub fn is_empty(&self) -> bool {
        *self == InstanceFilter::default()
    }

    /// The query string (without `?`) of the filter, in a fixed order: the address of the view.
    pub fn to_query(&self) -> String {
        let pair = |name: &str, value: &str| format!("{name}={}", encode_component(value));
        let mut parts = Vec::new();
        if let Some(w) = &self.workflow {
            parts.push(pair("workflow", w));
        }
        if !self.status.is_empty() {
            // Status names need no escaping, and a bare comma keeps the address readable.
            let names: Vec<&str> = self.status.iter().map(|s| s.as_str()).collect();
            parts.push(format!("status={}", names.join(",")));
        }
        if let Some(v) = self.version {
            parts.push(pair("version", &v.to_string()));
        }
        if let Some(k) = &self.key {
            parts.push(pair("key", k));
        }
        if let Some(t) = self.since {
            parts.push(pair("since", &crate::format::rfc3339(&t)));
        }
        if let Some(t) = self.until {
            parts.push(pair("until", &crate::format::rfc3339(&t)));
        }
        if let Some(n) = &self.node {
            parts.push(pair("node", n));
        }
        if let Some(c) = &self.error_class {
            parts.push(pair("error_class", c));
        }
        for content in &self.content {
            parts.push(format!("{}={}", encode_component(&content.name()), encode_component(&content.text())));
        }
        if self.slow {
            parts.push("slow=true".to_owned());
        }
        parts.join("&")
    }

    /// Adds `content`, replacing a filter on the same name; an error (shown as it is) when
    /// there are as many as the server takes.
    pub fn with_content(&mut self, content: ContentFilter) -> Result<(), String> {
        let full = self.content.len() >= MAX_CONTENT_FILTERS;
        match self.content.iter_mut().find(|c| c.name() == content.name()) {
            Some(same) => *same = content,
            None if full => return Err(format!("At most {MAX_CONTENT_FILTERS} content filters at once.")),
            None => self.content.push(content),
        }
        Ok(())
    }

    /// The same filter without the content filter named `name`.
    pub fn without_content(&self, name: &str) -> InstanceFilter {
        let content = self.content.iter().filter(|c| c.name() != name).cloned().collect();
        InstanceFilter { content, ..self.clone() }
    }

    /// `GET /instances/export` of this filter as `format` (`jsonl` or `csv`): a download link.
    pub fn export_url(&self, format: &str) -> String {
        let mut url = format!("{}/instances/export?format={format}", crate::urls::API);
        let query = self.to_query();
        if !query.is_empty() {
            url.push('&');
            url.push_str(&query);
        }
        url
    }

    /// The in-app address of this view.
    pub fn page(&self) -> String {
        match self.to_query() {
            q if q.is_empty() => "/instances".to_owned(),
            q => format!("/instances?{q}"),
        }
    }

    /// The view's address while bulk job `job` is followed on it (so a reload keeps following).
    pub fn page_with_job(&self, job: Option<&str>) -> String {
        let page = self.page();
        match job {
            None => page,
            Some(j) => format!("{page}{}job={}", if page.contains('?') { '&' } else { '?' }, encode_component(j)),
        }
    }

    /// `GET /instances` for this filter, continuing after `cursor` when given.
    pub fn api_url(&self, cursor: Option<&str>, limit: u32) -> String {
        let mut url = format!("{}/instances?limit={limit}", crate::urls::API);
        let query = self.to_query();
        if !query.is_empty() {
            url.push('&');
            url.push_str(&query);
        }
        if let Some(c) = cursor {
            url.push_str("&cursor=");
            url.push_str(&encode_component(c));
        }
        url
    }

    /// Whether an instance of `workflow` in `status` can belong to this view, as far as a live
    /// status change tells (its key, version and creation time are not in the change).
    pub fn may_admit(&self, workflow: &str, status: Option<InstanceStatus>) -> bool {
        self.workflow.as_deref().is_none_or(|w| w.eq_ignore_ascii_case(workflow))
            && (self.status.is_empty() || status.is_none_or(|now| self.status.contains(&now)))
    }

    /// The same filter with `status` added to its statuses, or taken out if it was in.
    pub fn toggled(&self, status: InstanceStatus) -> InstanceFilter {
        let mut statuses = self.status.clone();
        match statuses.iter().position(|s| *s == status) {
            Some(at) => {
                statuses.remove(at);
            }
            None => statuses.push(status),
        }
        InstanceFilter { status: sorted(statuses), ..self.clone() }
    }

    /// The filter as a bulk request's `filter`.
    pub fn to_api(&self) -> trellis_model::api::InstanceFilter {
        trellis_model::api::InstanceFilter {
            workflow: self.workflow.clone(),
            status: self.status.iter().map(|s| s.as_str().to_owned()).collect(),
            version: self.version,
            since: self.since,
            until: self.until,
            key: self.key.clone(),
            node: self.node.clone(),
            error_class: self.error_class.clone(),
            ids: Vec::new(),
            content: self.content.iter().map(|c| (c.name(), c.text())).collect(),
            slow: self.slow,
        }
    }
}

/// The known statuses of a comma-separated list, and the unknown names in it.
/// `statuses` once each, in `InstanceStatus::ALL` order.
fn sorted(statuses: impl IntoIterator<Item = InstanceStatus>) -> Vec<InstanceStatus> {
    let given: Vec<InstanceStatus> = statuses.into_iter().collect();
    InstanceStatus::ALL.iter().copied().filter(|s| given.contains(s)).collect()
}

/// Stores `value` if there is one; false when the text gave none.
fn set<T>(slot: &mut Option<T>, value: Option<T>) -> bool {
    let ok = value.is_some();
    if ok {
        *slot = value;
    }
    ok
}

fn warning(name: &str, value: &str) -> String {
    let shown: String = value.chars().take(40).collect();
    match name {
        "status" => {
            let known: Vec<&str> = InstanceStatus::ALL.iter().map(|s| s.as_str()).collect();
            format!("Ignored unknown status “{shown}”: use one of {}.", known.join(", "))
        }
        "workflow" => format!("Ignored workflow “{shown}”: not a workflow id."),
        "version" => format!("Ignored version “{shown}”: versions are whole numbers from 1."),
        _ if ContentFilter::is_content_name(name) => {
            format!("Ignored {name}: at most {MAX_CONTENT_FILTERS} content filters at once.")
        }
        "slow" => format!("Ignored slow “{shown}”: use true or false."),
        _ => format!("Ignored {name} “{shown}”: not a date and time (use 2026-01-31T09:00Z)."),
    }
}

/// RFC 3339, or a `datetime-local` value (`2026-01-31T09:00`, read as UTC).
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
        .map(|t| t.and_utc())
}

/// The value a `datetime-local` input shows for `t` (UTC, minutes).
pub fn local_input(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M").to_string()
}

fn is_uuid(text: &str) -> bool {
    text.len() == 36
        && text
            .char_indices()
            .all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { c == '-' } else { c.is_ascii_hexdigit() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: &str = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

    fn parse(query: &[(&str, &str)]) -> Parsed {
        InstanceFilter::parse(query.iter().copied())
    }

    #[test]
    fn a_full_filter_survives_the_round_trip_through_the_address() {
        let filter = InstanceFilter {
            workflow: Some(W.to_owned()),
            status: vec![InstanceStatus::Failed, InstanceStatus::TimedOut],
            version: Some(3),
            key: Some("order 7&x".to_owned()),
            since: parse_time("2026-01-31T09:00:00Z"),
            until: parse_time("2026-02-01T09:00:00Z"),
            node: Some("call".to_owned()),
            error_class: Some("timeout after <n> ms".to_owned()),
            content: vec![
                ContentFilter::parse_term("input.order.customer=acme & co").unwrap(),
                ContentFilter::parse_term("output.fetch.status=\"200\"").unwrap(),
            ],
            slow: true,
        };
        let query = filter.to_query();
        let pairs: Vec<(String, String)> = query
            .split('&')
            .map(|p| {
                let (n, v) = p.split_once('=').unwrap();
                (n.to_owned(), decode(v))
            })
            .collect();
        let back = InstanceFilter::parse(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        assert_eq!(back.warnings, Vec::<String>::new());
        assert_eq!(back.filter, filter);
    }

    /// Enough of percent-decoding for the round trip above.
    fn decode(v: &str) -> String {
        let mut out = Vec::new();
        let bytes = v.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' {
                out.push(u8::from_str_radix(&v[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn bad_values_are_dropped_and_named() {
        let parsed =
            parse(&[("status", "bogus"), ("workflow", "nope"), ("version", "0"), ("since", "yesterday"), ("key", "k")]);
        assert_eq!(parsed.filter, InstanceFilter { key: Some("k".to_owned()), ..Default::default() });
        assert_eq!(parsed.warnings.len(), 4);
        assert!(parsed.warnings[0].contains("unknown status “bogus”"), "{:?}", parsed.warnings);
        assert!(parsed.warnings[0].contains("failed"));
    }

    #[test]
    fn empty_and_unknown_parameters_are_no_filter_and_no_warning() {
        let parsed = parse(&[("status", " "), ("cursor", "garbage"), ("job", "x")]);
        assert!(parsed.filter.is_empty());
        assert!(parsed.warnings.is_empty());
        assert_eq!(parsed.filter.page(), "/instances");
        assert_eq!(parsed.filter.page_with_job(Some("j1")), "/instances?job=j1");
        let failed = InstanceFilter { status: vec![InstanceStatus::Failed], ..Default::default() };
        assert_eq!(failed.page_with_job(Some("j1")), "/instances?status=failed&job=j1");
    }

    #[test]
    fn statuses_read_from_commas_and_repeats_once_each_in_a_fixed_order() {
        let parsed = parse(&[("status", "timed_out, bogus"), ("status", "failed,timed_out")]);
        assert_eq!(parsed.filter.status, [InstanceStatus::Failed, InstanceStatus::TimedOut]);
        assert_eq!(parsed.warnings.len(), 1);
        assert!(parsed.warnings[0].contains("“bogus”"));
        assert_eq!(parsed.filter.to_query(), "status=failed,timed_out");
        let toggled = parsed.filter.toggled(InstanceStatus::Failed).toggled(InstanceStatus::Queued);
        assert_eq!(toggled.status, [InstanceStatus::Queued, InstanceStatus::TimedOut]);
        assert!(toggled.may_admit(W, Some(InstanceStatus::Queued)));
        assert!(!toggled.may_admit(W, Some(InstanceStatus::Failed)));
    }

    #[test]
    fn datetime_local_values_are_read_as_utc() {
        assert_eq!(parse_time("2026-01-31T09:05"), parse_time("2026-01-31T09:05:00Z"));
        assert_eq!(local_input(&parse_time("2026-01-31T09:05:59Z").unwrap()), "2026-01-31T09:05");
    }

    #[test]
    fn the_api_address_carries_the_filter_and_cursor() {
        let filter = InstanceFilter { status: vec![InstanceStatus::Running], ..Default::default() };
        assert_eq!(filter.api_url(Some("c/1"), 50), "/api/v1/instances?limit=50&status=running&cursor=c%2F1");
        assert_eq!(InstanceFilter::default().api_url(None, 50), "/api/v1/instances?limit=50");
    }

    #[test]
    fn content_filters_are_kept_once_per_name_and_bad_ones_named() {
        let parsed = parse(&[("input.customer", "acme"), ("input..x", "1"), ("input.customer", "globex")]);
        assert_eq!(parsed.filter.content.len(), 1);
        assert_eq!(parsed.filter.content[0].term(), "input.customer=globex");
        assert_eq!(parsed.warnings.len(), 1);
        assert!(parsed.warnings[0].contains("`input..x`"), "{:?}", parsed.warnings);
        assert_eq!(parsed.filter.to_query(), "input.customer=globex");
        assert!(parsed.filter.without_content("input.customer").is_empty());
        assert_eq!(parsed.filter.export_url("csv"), "/api/v1/instances/export?format=csv&input.customer=globex");
        assert_eq!(parsed.filter.to_api().content.get("input.customer").map(String::as_str), Some("globex"));
    }

    #[test]
    fn a_live_change_is_admitted_only_when_workflow_and_status_fit() {
        let filter =
            InstanceFilter { workflow: Some(W.to_owned()), status: vec![InstanceStatus::Failed], ..Default::default() };
        assert!(filter.may_admit(&W.to_uppercase(), Some(InstanceStatus::Failed)));
        assert!(!filter.may_admit(W, Some(InstanceStatus::Running)));
        assert!(!filter.may_admit("other", Some(InstanceStatus::Failed)));
        assert!(InstanceFilter::default().may_admit("any", None));
    }
}
