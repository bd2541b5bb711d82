//! `trellis login --sso`: signing the command line in through the server's single sign-on
//! provider. The server talks to the provider (it holds the client secret). Where the
//! provider offers the device authorization grant, this asks the server to begin one, shows
//! the person where to go and which code to enter, and polls until they have signed in
//! there; otherwise the browser signs in and hands the result to a loopback port
//! (`sso_loopback.rs`).

use super::api::Api;
use super::failure::{CliError, CliResult};
use super::profiles::Profile;
use chrono::Utc;
use reqwest::{Method, StatusCode};
use std::time::{Duration, Instant};
use trellis_model::api::{AuthProviders, DeviceStarted, TokenResponse};

pub async fn sso_login(api: &Api) -> CliResult<Profile> {
    let providers: AuthProviders = api.get("/auth/providers", &[]).await?;
    if providers.oidc.is_none() {
        return Err(CliError::refused(format!(
            "{} has no single sign-on (TRELLIS_OIDC_ISSUER is not set there); sign in with --username, or pipe an \
             API key to --with-token",
            api.base
        )));
    }
    let answer = match api.post::<DeviceStarted>("/auth/oidc/device", &serde_json::json!({})).await {
        Ok(started) => device_flow(api, started).await?,
        // The provider has no device flow: the browser on this machine signs in instead.
        Err(e) if e.status == Some(404) => super::sso_loopback::loopback_login(api).await?,
        Err(e) => return Err(e),
    };
    let expires_at = Utc::now() + chrono::Duration::seconds(answer.expires_in.min(i64::MAX as u64) as i64);
    Ok(Profile { url: api.base.clone(), token: answer.access_token, username: None, expires_at: Some(expires_at) })
}

async fn device_flow(api: &Api, started: DeviceStarted) -> CliResult<TokenResponse> {
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
        return response.json().await.map_err(|e| {
            CliError::refused(format!("the server's answer to the sign-in is not what this client expects ({e})"))
        });
    }
}
