//! The one error type every API call returns, so every component reports failures the same way.

use std::fmt;
use trellis_model::api::Problem;

#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// The server answered with an error status; the body was problem+json or is summarised as one.
    Problem(Problem),
    /// No usable answer: the server was unreachable or replied with something we could not read.
    Transport(String),
}

impl ApiError {
    /// Builds the error for a non-2xx response. Proxies and crashes can answer with HTML or nothing,
    /// so a body that is not a problem still yields a problem with the right status.
    pub fn from_response(status: u16, body: &str) -> Self {
        match serde_json::from_str::<Problem>(body) {
            Ok(problem) => ApiError::Problem(problem),
            Err(_) => ApiError::Problem(Problem {
                kind: "about:blank".to_owned(),
                title: reason_phrase(status).to_owned(),
                status,
                detail: None,
                errors: Vec::new(),
            }),
        }
    }

    /// 401: the session is missing or expired, so the app should send the user to sign in.
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, ApiError::Problem(p) if p.status == 401)
    }

    /// 404: what was asked for does not exist (or not for this caller).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ApiError::Problem(p) if p.status == 404)
    }

    /// What the server said of one field (a problem's issue whose `path` is `field`), to show
    /// beside that field.
    pub fn field_message(&self, field: &str) -> Option<String> {
        match self {
            ApiError::Problem(p) => {
                p.errors.iter().find(|i| i.path.as_deref() == Some(field)).map(|i| i.message.clone())
            }
            ApiError::Transport(_) => None,
        }
    }

    /// The sentence to show a person: the problem's detail when the server gave one, else its title.
    pub fn message(&self) -> String {
        match self {
            ApiError::Problem(p) => match p.detail.as_deref() {
                Some(detail) if !detail.trim().is_empty() => detail.to_owned(),
                _ => p.title.clone(),
            },
            ApiError::Transport(why) => format!("Could not reach the Trellis server ({why})."),
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ApiError {}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500..=599 => "The server failed to handle the request",
        _ => "Request failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_body_is_kept_and_its_detail_is_the_message() {
        let body =
            r#"{"type":"about:blank","title":"Unauthorized","status":401,"detail":"wrong username or password"}"#;
        let err = ApiError::from_response(401, body);
        assert!(err.is_unauthorized());
        assert_eq!(err.message(), "wrong username or password");
    }

    #[test]
    fn a_404_is_not_found_and_nothing_else_is() {
        assert!(ApiError::from_response(404, "").is_not_found());
        assert!(!ApiError::from_response(403, "").is_not_found());
        assert!(!ApiError::Transport("down".into()).is_not_found());
    }

    #[test]
    fn a_problem_without_detail_shows_its_title() {
        let body = r#"{"type":"about:blank","title":"Forbidden","status":403}"#;
        assert_eq!(ApiError::from_response(403, body).message(), "Forbidden");
    }

    #[test]
    fn a_non_json_error_body_still_carries_the_status() {
        let err = ApiError::from_response(502, "<html>Bad gateway</html>");
        assert!(matches!(&err, ApiError::Problem(p) if p.status == 502));
        assert!(!err.is_unauthorized());
        assert_eq!(err.message(), "The server failed to handle the request");
    }

    #[test]
    fn transport_errors_say_the_server_was_unreachable() {
        let err = ApiError::Transport("TypeError: Failed to fetch".into());
        assert!(err.message().starts_with("Could not reach the Trellis server"));
        assert!(!err.is_unauthorized());
    }
}
