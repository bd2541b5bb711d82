//! The instances list's query, read the same way by the list and the export so that every filter
//! one takes the other takes too: the filters ([`ListFilters`], unknown names refused), the
//! content filters, whose names are open (`input.<path>`, `output.<node>.<path>`) and so cannot be
//! fields of a struct, and the few names only one endpoint reads (the list's page, the export's
//! format), its [`QueryHead`].

use crate::http::middleware::error::{ApiError, ApiResult};
use crate::store::{parse_content, parse_statuses, InstanceQuery};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::Uri;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::borrow::Cow;
use trellis_model::api::ContentFilter;
use uuid::Uuid;

/// The parameters only one endpoint reads, beside the shared filters.
pub trait QueryHead: DeserializeOwned {
    /// The names read into `Self`; every other name is a filter.
    const NAMES: &'static [&'static str];
}

/// The endpoint's own parameters, the filters, and the content filters in the order given.
#[derive(Debug)]
pub struct ListQuery<H> {
    pub head: H,
    pub filters: ListFilters,
    pub content: Vec<ContentFilter>,
}

type Pairs<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;

impl<H: QueryHead, S: Send + Sync> FromRequestParts<S> for ListQuery<H> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        ListQuery::parse(parts.uri.query().unwrap_or_default())
    }
}

impl<H: QueryHead> ListQuery<H> {
    /// Reads a query string (without its `?`) as the endpoint reads its own.
    pub fn parse(query: &str) -> Result<Self, ApiError> {
        let (content, rest): (Pairs<'_>, Pairs<'_>) =
            url::form_urlencoded::parse(query.as_bytes()).partition(|(name, _)| ContentFilter::is_content_name(name));
        let content = parse_content(content.iter().map(|(n, v)| (n.as_ref(), v.as_ref())), "").map_err(|issues| {
            let detail = issues.iter().map(|i| i.message.as_str()).collect::<Vec<_>>().join("; ");
            ApiError::invalid(format!("invalid content filter: {detail}"), issues)
        })?;
        let (head, filters): (Pairs<'_>, Pairs<'_>) =
            rest.into_iter().partition(|(name, _)| H::NAMES.contains(&name.as_ref()));
        Ok(ListQuery { head: read(head)?, filters: read(filters)?, content })
    }
}

/// `T` from `pairs`, re-encoded and read by the same reader as any repeated query.
fn read<T: DeserializeOwned>(pairs: Pairs<'_>) -> ApiResult<T> {
    let query = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
    let uri: Uri = format!("/?{query}").parse().map_err(|_| ApiError::BadRequest("malformed query".to_owned()))?;
    let axum_extra::extract::Query(value) = axum_extra::extract::Query::<T>::try_from_uri(&uri)?;
    Ok(value)
}

/// The list's page: where it starts and how long it is.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct Paging {
    pub cursor: Option<Uuid>,
    pub limit: Option<i64>,
}

impl QueryHead for Paging {
    const NAMES: &'static [&'static str] = &["cursor", "limit"];
}

/// Which instances: the filters the list, its counts and the export share.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListFilters {
    pub workflow: Option<Uuid>,
    /// Any of these statuses: repeat the key or separate them with commas.
    #[serde(default)]
    pub status: Vec<String>,
    pub version: Option<i64>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub key: Option<String>,
    /// Failed at this node (a failure group's `node`).
    pub node: Option<String>,
    /// Failed with this error class (a failure group's `error_class`).
    pub error_class: Option<String>,
    /// `true`: only running instances with a node running past its slow threshold now.
    pub slow: Option<bool>,
}

impl ListFilters {
    /// The query for these filters and content filters (from the first page, no limit yet).
    pub fn into_query(self, content: Vec<ContentFilter>) -> ApiResult<InstanceQuery> {
        let statuses = parse_statuses(&self.status).map_err(ApiError::BadRequest)?;
        Ok(InstanceQuery {
            workflow: self.workflow,
            statuses,
            version: self.version,
            key: self.key,
            since: self.since,
            until: self.until,
            node: self.node,
            error_class: self.error_class,
            ids: Vec::new(),
            content,
            slow_at: self.slow.unwrap_or(false).then(Utc::now),
            before: None,
            limit: 0,
        })
    }
}

/// The content filters, documented: their names are patterns, so no struct has them as fields.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ContentParams {
    /// `input.<path>=<value>`: instances whose input holds `value` at the dotted `path` of object
    /// keys (e.g. `input.order.customer=acme`). A value that parses as JSON compares as JSON
    /// (`42` the number, `"42"` the string, `true`), any other as a string. Only scalars. Repeat
    /// with other paths (at most 10 content filters); all must hold. Keys: 1-64 letters, digits,
    /// `_` or `-`; at most 10 per path; a value of at most 1,024 bytes. A malformed one is a 422
    /// naming it.
    #[param(rename = "input.<path>")]
    input: Option<String>,
    /// `output.<node id>.<path>=<value>`: instances where that node's output holds `value` at
    /// `path` (the whole output when no path follows the node id); compared as for `input.<path>`.
    #[param(rename = "output.<node>.<path>")]
    output: Option<String>,
}
