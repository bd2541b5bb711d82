//! Which instances a bulk action is for (`POST /instances/{purge,cancel,retry}`): the list's
//! filter keys, or the ids of the rows an operator selected.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// Ids one bulk request may name; more is a filter's job.
pub const MAX_FILTER_IDS: usize = 1_000;

/// Every key narrows the match; none at all matches every instance (which a bulk request
/// must confirm with `all`). Unknown keys are refused where the filter is read (not by serde:
/// the content filters' keys are open, see `content`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct InstanceFilter {
    /// A workflow id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// Any of these statuses: `"failed"`, `["failed", "timed_out"]` and `"failed,timed_out"`
    /// all read.
    #[serde(default, deserialize_with = "one_or_many", skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<crate::InstanceStatus>))]
    pub status: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// Created at or after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Created before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<DateTime<Utc>>,
    /// A business key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Failed at this node (a failure group's `node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Failed with this error class (a failure group's `error_class`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<String>,
    /// Only these instances (at most 1,000): the rows an operator selected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// Content filters, as in the list's query: `"input.customer": "acme"`,
    /// `"output.fetch.status": "200"` (the value is text, read as in the query: JSON if it
    /// parses, else a string; a JSON number, boolean or null is taken as its text, so `5` and
    /// `"5"` read alike). Any other key lands here too and is refused by name.
    #[serde(flatten, deserialize_with = "scalar_texts")]
    pub content: BTreeMap<String, String>,
    /// Only running instances with a node past its slow threshold (judged when matched).
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub slow: bool,
}

impl InstanceFilter {
    /// No key given: matches every instance.
    pub fn is_empty(&self) -> bool {
        // Destructured so a key added later cannot be forgotten here.
        let InstanceFilter { workflow, status, version, since, until, key, node, error_class, ids, content, slow } =
            self;
        workflow.is_none()
            && status.is_empty()
            && version.is_none()
            && since.is_none()
            && until.is_none()
            && key.is_none()
            && node.is_none()
            && error_class.is_none()
            && ids.is_empty()
            && content.is_empty()
            && !slow
    }
}

/// The body of a bulk purge, cancel or retry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BulkRequest {
    #[serde(default)]
    pub filter: InstanceFilter,
    /// Only count and sample what would be acted on.
    #[serde(default)]
    pub dry_run: bool,
    /// Required (`true`) to act on every instance with an empty filter: one request must not
    /// sweep everything by leaving the filter out.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub all: bool,
}

/// A string or an array of strings, each string split at commas; blanks dropped.
fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    let items = match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    };
    Ok(split_list(&items))
}

/// The content filters' values as the query's text: a string as it is, a number, boolean or
/// null as its JSON text; an object or array is no filter value.
fn scalar_texts<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, String>, D::Error> {
    use serde::de::Error;
    let values = BTreeMap::<String, serde_json::Value>::deserialize(deserializer)?;
    values
        .into_iter()
        .map(|(key, value)| match value {
            serde_json::Value::String(text) => Ok((key, text)),
            serde_json::Value::Array(_) | serde_json::Value::Object(_) => {
                Err(D::Error::custom(format!("`{key}` takes a string, number, boolean or null, not a list or object")))
            }
            scalar => Ok((key, scalar.to_string())),
        })
        .collect()
}

/// A status filter (names repeated, separated by commas, or both) as the statuses it names,
/// once each in the order given, and the names that are no status (for the caller to refuse
/// or to warn about).
pub fn read_statuses(items: &[String]) -> (Vec<crate::InstanceStatus>, Vec<String>) {
    let (mut statuses, mut unknown) = (Vec::new(), Vec::new());
    for name in split_list(items) {
        match crate::InstanceStatus::parse(&name) {
            Some(status) if !statuses.contains(&status) => statuses.push(status),
            Some(_) => {}
            None => unknown.push(name),
        }
    }
    (statuses, unknown)
}

/// `["a,b", " c "]` → `["a", "b", "c"]`: lists given as repeated values, commas, or both.
pub fn split_list(items: &[String]) -> Vec<String> {
    items.iter().flat_map(|s| s.split(',')).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_reads_as_one_a_list_or_commas() {
        for body in [r#"{"status":"failed,timed_out"}"#, r#"{"status":["failed","timed_out"]}"#] {
            let f: InstanceFilter = serde_json::from_str(body).unwrap();
            assert_eq!(f.status, ["failed", "timed_out"]);
        }
        let one: InstanceFilter = serde_json::from_str(r#"{"status":"failed"}"#).unwrap();
        assert_eq!(serde_json::to_value(&one).unwrap(), serde_json::json!({"status": ["failed"]}));
        assert!(serde_json::from_str::<InstanceFilter>(r#"{"status":3}"#).is_err());
    }

    #[test]
    fn content_values_read_as_text_whether_json_scalars_or_strings() {
        let body = r#"{"input.n":5,"input.ok":true,"input.gone":null,"input.s":"acme","input.f":2.5}"#;
        let f: InstanceFilter = serde_json::from_str(body).unwrap();
        let texts: Vec<(&str, &str)> = f.content.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            texts,
            [("input.f", "2.5"), ("input.gone", "null"), ("input.n", "5"), ("input.ok", "true"), ("input.s", "acme")]
        );
        let nested = serde_json::from_str::<InstanceFilter>(r#"{"input.order":{"id":1}}"#).unwrap_err();
        assert!(nested.to_string().contains("input.order"), "{nested}");
    }

    #[test]
    fn only_a_filter_without_keys_is_empty() {
        assert!(InstanceFilter::default().is_empty());
        assert!(!InstanceFilter { ids: vec!["x".into()], ..InstanceFilter::default() }.is_empty());
        assert!(!InstanceFilter { status: vec!["failed".into()], ..InstanceFilter::default() }.is_empty());
    }
}
