//! Who is calling and what they may do.
//!
//! Callers prove who they are with a JWT (from `POST /auth/login`, sent as a bearer token
//! or in the session cookie) or an API key (bearer). Either way they become a
//! [`Principal`] with one [`Role`]; routes demand a minimum role through
//! [`crate::http::middleware::authed::Authed`].

pub mod api_key;
pub mod bootstrap;
pub mod jwt;
pub mod oidc;
pub mod password;
pub mod throttle;

/// Roles, each including the ones before it: defined with the other closed sets in trellis-model.
pub use trellis_model::Role;

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
    fn usernames_reject_spaces_and_markup() {
        assert!(check_username("ada.lovelace@example").is_ok());
        assert!(check_username("").is_err());
        assert!(check_username("<script>").is_err());
        assert!(check_username("a b").is_err());
    }
}
