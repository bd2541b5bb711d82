//! Secrets (`/api/v1/secrets`): named values referenced as `{{ secret.NAME }}`. No body here
//! carries a stored value back: only what is sent to create or rotate one.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `POST /api/v1/secrets`. `Debug` leaves the value out (see below).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateSecret {
    pub name: String,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `PUT /api/v1/secrets/{name}`: a new value (rotation), and optionally a new description.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateSecret {
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

// By hand, so a value never reaches a log line through `{:?}`.
impl std::fmt::Debug for CreateSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreateSecret")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for UpdateSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateSecret").field("description", &self.description).finish_non_exhaustive()
    }
}

/// A workflow whose draft or a published version references a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecretUse {
    pub id: String,
    pub name: String,
}

/// One secret in `GET /api/v1/secrets` and the answer to a create or rotation: never its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Secret {
    pub name: String,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The workflows that reference it, by name.
    #[serde(default)]
    pub used_by: Vec<SecretUse>,
}
