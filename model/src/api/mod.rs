//! Request and response bodies of the HTTP API (contract v1), shared with the SPA, one file
//! per resource. Every JSON body the server sends or reads is one of these types, so the
//! server, the SPA and the API tests cannot disagree on a field.
//!
//! Absent versus `null` is part of the contract: a field the server always sends is a plain
//! `Option` (sent as `null`); one it sends only in some answers is skipped when `None`; the
//! few that are sometimes absent and otherwise possibly `null` use [`double_option`].

mod access;
mod alerts;
mod approvals;
mod cluster;
mod content;
mod filter;
mod insights;
mod instances;
mod limits;
mod operations;
mod scripts;
mod secrets;
mod tasks;
mod triggers;
mod views;
mod workflows;

pub use access::*;
pub use alerts::*;
pub use approvals::*;
pub use cluster::*;
pub use content::*;
pub use filter::*;
pub use insights::*;
pub use instances::*;
pub use limits::*;
pub use operations::*;
pub use scripts::*;
pub use secrets::*;
pub use tasks::*;
pub use triggers::*;
pub use views::*;
pub use workflows::*;

use crate::validate::Issue;
use crate::InstanceStatus;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An RFC 9457 problem, as every error response carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<Issue>,
}

/// A page of a list that goes on: `next_cursor` is `null` on the last page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// A whole, short list (versions, API keys, a workflow's triggers): no cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Items<T> {
    pub items: Vec<T>,
}

/// Instances per status, every status present (0 when none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(transparent)]
pub struct StatusCounts(pub BTreeMap<String, i64>);

impl StatusCounts {
    /// Every status at 0, then the given counts over them.
    pub fn of(counts: impl IntoIterator<Item = (InstanceStatus, i64)>) -> Self {
        let mut all: BTreeMap<String, i64> = InstanceStatus::ALL.iter().map(|s| (s.as_str().to_owned(), 0)).collect();
        all.extend(counts.into_iter().map(|(status, n)| (status.as_str().to_owned(), n)));
        StatusCounts(all)
    }

    pub fn get(&self, status: InstanceStatus) -> i64 {
        self.0.get(status.as_str()).copied().unwrap_or(0)
    }
}

/// For a field that is absent (`None`), `null` (`Some(None)`) or a value (`Some(Some(v))`):
/// use with `#[serde(default, skip_serializing_if = "Option::is_none", with = "double_option")]`.
pub mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(value: &Option<Option<T>>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(serializer),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

/// `skip_serializing_if` for flags sent only when set.
fn is_false(flag: &bool) -> bool {
    !flag
}

#[cfg(test)]
mod tests;
