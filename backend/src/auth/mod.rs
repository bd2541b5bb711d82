//! Who is calling and what they may do.
//!
//! Callers prove who they are with a JWT (from `POST /auth/login`, sent as a bearer token
//! or in the session cookie) or an API key (bearer). Either way they become a
//! [`Principal`] with one [`Role`]; routes demand a minimum role through
//! [`crate::http::middleware::authed::Authed`].

pub mod api_key;
pub mod bootstrap;
pub mod jwt;
pub mod password;
pub mod throttle;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Roles, each including the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Viewer,
    Operator,
    Editor,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "viewer" => Ok(Role::Viewer),
            "operator" => Ok(Role::Operator),
            "editor" => Ok(Role::Editor),
            "admin" => Ok(Role::Admin),
            other => Err(format!("unknown role `{other}`; use viewer, operator, editor or admin")),
        }
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The user id, or the API key id.
    pub id: String,
    /// The username, or `key:<name>` for an API key; recorded as the actor of changes.
    pub name: String,
    pub role: Role,
}

pub const MAX_USERNAME_LEN: usize = 64;

/// Usernames are short and printable so they are safe in logs and audit records.
pub fn check_username(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_USERNAME_LEN
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'));
    if ok {
        Ok(())
    } else {
        Err(format!("usernames are 1-{MAX_USERNAME_LEN} letters, digits, `_`, `-`, `.` or `@`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_from_viewer_to_admin() {
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Editor && Role::Editor < Role::Admin);
        for role in [Role::Viewer, Role::Operator, Role::Editor, Role::Admin] {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert!("root".parse::<Role>().is_err());
    }

    #[test]
    fn usernames_reject_spaces_and_markup() {
        assert!(check_username("ada.lovelace@example").is_ok());
        assert!(check_username("").is_err());
        assert!(check_username("<script>").is_err());
        assert!(check_username("a b").is_err());
    }
}
