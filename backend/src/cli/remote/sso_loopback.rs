//! `trellis login --sso` where the provider has no device flow: the browser on this machine
//! signs in, and the server hands the result to a port this command listens on at 127.0.0.1
//! (RFC 8252 §7.3). What comes back is a one-time code, worth a session only with the PKCE
//! verifier that never left this process (`crate::auth::oidc::loopback` on the server).

use super::api::Api;
use super::failure::{CliError, CliResult};
use crate::auth::oidc::{challenge_of, random_text};
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::Html;
use axum::routing::get;
use serde::Deserialize;
use std::time::Duration;
use tokio::sync::mpsc;
use trellis_model::api::{LoopbackTokenRequest, TokenResponse};

/// As long as the server keeps the attempt (its sign-in form may take that long).
const WAIT: Duration = Duration::from_secs(600);

/// What the browser brings back to the loopback port.
#[derive(Debug, Deserialize)]
struct Returned {
    code: Option<String>,
    error: Option<String>,
}

pub async fn loopback_login(api: &Api) -> CliResult<TokenResponse> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| CliError::usage(format!("cannot listen on 127.0.0.1 for the browser's sign-in: {e}")))?;
    let port = listener.local_addr().map_err(|e| CliError::usage(e.to_string()))?.port();
    let verifier = random_text();
    let challenge = challenge_of(&verifier);
    let url = format!("{}/api/v1/auth/oidc/login?cli_port={port}&cli_challenge={challenge}", api.base);
    eprintln!("To sign in, open this address in a browser on this machine:\n  {url}");
    open_browser(&url);
    eprintln!("waiting for the sign-in to finish…");
    let returned = wait_for_browser(listener).await?;
    let code = match (returned.code, returned.error) {
        (Some(code), _) => code,
        (None, error) => {
            let words = trellis_model::api::sso_refusal_words(error.as_deref().unwrap_or_default());
            return Err(CliError::refused(format!("single sign-on refused: {words}")));
        }
    };
    api.post("/auth/oidc/cli/token", &LoopbackTokenRequest { code, code_verifier: verifier }).await
}

/// Serves the loopback port until the browser arrives with a code or a refusal.
async fn wait_for_browser(listener: tokio::net::TcpListener) -> CliResult<Returned> {
    let (sender, mut arrived) = mpsc::channel::<Returned>(1);
    let page = get(move |Query(returned): Query<Returned>| {
        let sender = sender.clone();
        async move {
            // Anything else on this machine may knock: only the server's answer ends the wait.
            if returned.code.is_none() && returned.error.is_none() {
                return (StatusCode::BAD_REQUEST, Html(PAGE_UNKNOWN));
            }
            let page = if returned.code.is_some() { PAGE_SIGNED_IN } else { PAGE_REFUSED };
            let _ = sender.try_send(returned);
            (StatusCode::OK, Html(page))
        }
    });
    let app = axum::Router::new().route("/callback", page);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let returned = tokio::time::timeout(WAIT, arrived.recv()).await;
    server.abort();
    match returned {
        Ok(Some(returned)) => Ok(returned),
        _ => Err(CliError::refused(
            "the browser did not finish the sign-in in 10 minutes; run `trellis login --sso` again",
        )),
    }
}

const PAGE_SIGNED_IN: &str =
    "<!doctype html><title>Trellis</title><p>Signed in. You can close this tab and go back to the terminal.</p>";
const PAGE_REFUSED: &str =
    "<!doctype html><title>Trellis</title><p>The sign-in was refused; the terminal says why.</p>";
const PAGE_UNKNOWN: &str = "<!doctype html><title>Trellis</title><p>This address waits for a Trellis sign-in.</p>";

/// Opens the address in the person's browser where there is one to open; the address is
/// printed either way (a terminal over SSH has none, and then the person copies it).
fn open_browser(url: &str) {
    let opener = std::env::var("BROWSER").ok().filter(|b| !b.trim().is_empty()).or_else(|| {
        let desktop = cfg!(target_os = "macos")
            || std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some();
        desktop.then(|| if cfg!(target_os = "macos") { "open" } else { "xdg-open" }.to_owned())
    });
    if let Some(opener) = opener {
        let spawned = std::process::Command::new(&opener)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Err(e) = spawned {
            tracing::debug!(%opener, error = %e, "could not open a browser");
        }
    }
}
