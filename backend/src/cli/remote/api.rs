//! A small typed client of the Trellis HTTP API (`/api/v1`), the only way the command line
//! talks to a server. Bodies are the `trellis_model::api` types the server itself uses, so
//! the two cannot disagree on a field; every refusal becomes one line with the problem's
//! `detail`.

use super::failure::{CliError, CliResult};
use reqwest::{Method, RequestBuilder, Response, StatusCode};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::Duration;
use trellis_model::api::Problem;

/// How long to wait for a server to accept the connection before saying it is unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Api {
    http: reqwest::Client,
    /// The server's address without a trailing slash, e.g. `http://127.0.0.1:8080`.
    pub base: String,
    token: Option<String>,
}

impl Api {
    pub fn new(base: &str, token: Option<String>) -> CliResult<Api> {
        let base = normalize_url(base)?;
        let http = crate::http_client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // A redirect to another scheme keeps reqwest's Authorization header: follow none, so
            // the token goes only where it was pointed (a 3xx is reported as a refusal).
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| CliError::usage(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Api { http, base, token })
    }

    /// A request to `/api/v1{path}` with the credential.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let request = self.http.request(method, format!("{}/api/v1{path}", self.base));
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Sends `request`; a connection failure or a refusal becomes a [`CliError`].
    pub async fn send(&self, request: RequestBuilder) -> CliResult<Response> {
        let response = request.send().await.map_err(|e| self.transport_error(&e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(refusal(response, self.token.is_some()).await)
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> CliResult<T> {
        self.json(self.request(Method::GET, path).query(query)).await
    }

    pub async fn post<T: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> CliResult<T> {
        self.json(self.request(Method::POST, path).json(body)).await
    }

    /// Sends `request` and reads the answer as `T`.
    pub async fn json<T: DeserializeOwned>(&self, request: RequestBuilder) -> CliResult<T> {
        let response = self.send(request).await?;
        let url = response.url().path().to_owned();
        let bytes = response.bytes().await.map_err(|e| self.transport_error(&e))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            CliError::refused(format!(
                "the server's answer to {url} is not what this client expects ({e}); is the client the same version \
                 as the server?"
            ))
        })
    }

    /// Sends `request` and ignores the body (204s and actions whose answer is not shown).
    pub async fn call(&self, request: RequestBuilder) -> CliResult<()> {
        self.send(request).await.map(drop)
    }

    /// A connection-level failure, said with what to check.
    pub fn transport_error(&self, e: &reqwest::Error) -> CliError {
        let mut cause = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(inner) = source {
            cause = inner.to_string();
            source = inner.source();
        }
        if e.is_connect() || e.is_timeout() || e.is_request() {
            CliError::unreachable(format!(
                "cannot reach the server at {} ({cause}); check --url (or TRELLIS_URL) and that the server is running",
                self.base
            ))
        } else {
            CliError::unreachable(format!("the connection to {} broke off ({cause}); try again", self.base))
        }
    }
}

/// `host:port` and `http://host:port/` both read as `http://host:port`.
pub fn normalize_url(url: &str) -> CliResult<String> {
    let trimmed = url.trim().trim_end_matches('/');
    let with_scheme = if trimmed.contains("://") { trimmed.to_owned() } else { format!("http://{trimmed}") };
    match url::Url::parse(&with_scheme) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some() => Ok(with_scheme),
        _ => Err(CliError::usage(format!(
            "`{url}` is not a server address; give one like http://127.0.0.1:8080 or https://trellis.example.com"
        ))),
    }
}

/// A non-2xx answer as one line: the problem's `detail` (and the issues it lists), with a
/// hint for the answers a user can do something about.
async fn refusal(response: Response, had_token: bool) -> CliError {
    let status = response.status();
    let body = response.bytes().await.unwrap_or_default();
    let detail = match serde_json::from_slice::<Problem>(&body) {
        Ok(problem) => describe(&problem),
        Err(_) => String::from_utf8_lossy(&body).trim().chars().take(300).collect(),
    };
    let detail = if detail.is_empty() { status.canonical_reason().unwrap_or("no detail").to_owned() } else { detail };
    let hint = match status {
        StatusCode::UNAUTHORIZED if had_token => {
            "; the token is wrong or expired: run `trellis login` or set TRELLIS_TOKEN to a valid API key"
        }
        StatusCode::UNAUTHORIZED => "; sign in first: run `trellis login --url URL`, or set TRELLIS_TOKEN",
        StatusCode::FORBIDDEN => "; ask an admin for a role that allows this",
        StatusCode::NOT_FOUND if detail.starts_with("Not Found") => {
            "; is --url (or TRELLIS_URL) the address of a Trellis server?"
        }
        _ => "",
    };
    CliError::refused_with(status.as_u16(), format!("the server refused ({}): {detail}{hint}", status.as_u16()))
}

/// The problem's `detail`, followed by the issues it lists when the detail does not already
/// say them.
pub fn describe(problem: &Problem) -> String {
    let mut text = problem.detail.clone().unwrap_or_else(|| problem.title.clone());
    let missing: Vec<String> = problem
        .errors
        .iter()
        .filter(|issue| !text.contains(&issue.message))
        .map(|issue| match &issue.node {
            Some(node) => format!("node `{node}`: {}", issue.message),
            None => issue.message.clone(),
        })
        .collect();
    if !missing.is_empty() {
        text = format!("{text}: {}", missing.join("; "));
    }
    text.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_get_a_scheme_and_lose_the_trailing_slash() {
        assert_eq!(normalize_url("127.0.0.1:8080").unwrap(), "http://127.0.0.1:8080");
        assert_eq!(normalize_url("https://t.example.com/").unwrap(), "https://t.example.com");
        assert!(normalize_url("ftp://x").is_err());
        assert!(normalize_url("").is_err());
    }
}
