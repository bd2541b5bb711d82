//! The instances list's query (also the export's): named parameters read into `T` as usual
//! (unknown names refused), beside the content filters, whose names are open
//! (`input.<path>`, `output.<node>.<path>`) and so cannot be fields of `T`.

use crate::http::middleware::error::{ApiError, ApiResult};
use crate::store::{parse_content, parse_statuses, InstanceQuery};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::Uri;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use trellis_model::api::ContentFilter;
use uuid::Uuid;

/// `T` from the query's other parameters, and its content filters in the order given.
#[derive(Debug)]
pub struct ListQuery<T> {
    pub params: T,
    pub content: Vec<ContentFilter>,
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ListQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let (content, rest): (Vec<_>, Vec<_>) =
            url::form_urlencoded::parse(query.as_bytes()).partition(|(name, _)| ContentFilter::is_content_name(name));
        let content = parse_content(content.iter().map(|(n, v)| (n.as_ref(), v.as_ref())), "").map_err(|issues| {
            let detail = issues.iter().map(|i| i.message.as_str()).collect::<Vec<_>>().join("; ");
            ApiError::invalid(format!("invalid content filter: {detail}"), issues)
        })?;
        let rest = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(rest).finish();
        // The other parameters, re-encoded, go through the same reader as any repeated query.
        let uri: Uri = format!("/?{rest}").parse().map_err(|_| ApiError::BadRequest("malformed query".to_owned()))?;
        let axum_extra::extract::Query(params) = axum_extra::extract::Query::<T>::try_from_uri(&uri)?;
        Ok(ListQuery { params, content })
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
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
    pub cursor: Option<Uuid>,
    pub limit: Option<i64>,
}

impl ListParams {
    /// The query for these parameters and content filters (no page limit yet).
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
            before: self.cursor,
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
