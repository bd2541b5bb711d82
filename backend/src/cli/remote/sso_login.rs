//! `trellis login --sso`: signing the command line in through the server's single sign-on
//! provider with the device authorization grant. The server talks to the provider (it holds
//! the client secret); this asks it to begin, shows the person where to go and which code to
//! enter, and polls until they have signed in there.

use super::api::Api;
use super::failure::{CliError, CliResult};
use super::profiles::Profile;
use chrono::Utc;
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use std::time::{Duration, Instant};
use trellis_model::api::TokenResponse;

#[derive(Debug, Deserialize)]
struct DeviceStarted {
    device_code: String,
    user_code: String,
    verification_uri: String,
    verification_uri_complete: Option<String>,
    expires_in: u64,
    interval: u64,
}

pub async fn sso_login(api: &Api) -> CliResult<Profile> {
    let started: DeviceStarted =
        api.post("/auth/oidc/device", &serde_json::json!({})).await.map_err(|e| not_offered(e, &api.base))?;
    eprintln!("To sign in, open {} and enter the code {}", started.verification_uri, started.user_code);
    if let Some(direct) = &started.verification_uri_complete {
        eprintln!("(or open {direct} directly)");
    }
    eprintln!("waiting for the sign-in to finish…");
    let deadline = Instant::now() + Duration::from_secs(started.expires_in.clamp(1, 3600));
    let interval = Duration::from_secs(started.interval.clamp(1, 60));
    let body = serde_json::json!({"device_code": started.device_code});
    loop {
        tokio::time::sleep(interval).await;
        let request = api.request(Method::POST, "/auth/oidc/device/token").json(&body);
        let response = api.send(request).await?;
        if response.status() == StatusCode::ACCEPTED {
            if Instant::now() >= deadline {
                return Err(CliError::refused(
                    "the sign-in code expired before the sign-in finished; run `trellis login --sso` again",
                ));
            }
            continue;
        }
        let answer: TokenResponse = response.json().await.map_err(|e| {
            CliError::refused(format!("the server's answer to the sign-in is not what this client expects ({e})"))
        })?;
        let expires_at = Utc::now() + chrono::Duration::seconds(answer.expires_in.min(i64::MAX as u64) as i64);
        return Ok(Profile {
            url: api.base.clone(),
            token: answer.access_token,
            username: None,
            expires_at: Some(expires_at),
        });
    }
}

/// The server has no single sign-on, or its provider has no device flow: say what to do instead.
fn not_offered(error: CliError, server: &str) -> CliError {
    match error.status {
        Some(404) => CliError {
            message: format!(
                "{server} offers no single sign-on from the command line ({}); sign in with --username, or pipe an API \
                 key to --with-token",
                error.message
            ),
            ..error
        },
        _ => error,
    }
}
