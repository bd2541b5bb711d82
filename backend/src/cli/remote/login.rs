//! `trellis login` and `trellis logout`: a profile (server + credential) saved for the
//! commands that follow.

use super::api::Api;
use super::failure::{CliError, CliResult, Exit};
use super::hidden_input::read_hidden_line;
use super::profiles::{Credentials, Profile};
use super::{say, Target};
use chrono::Utc;
use clap::Args;
use reqwest::Method;
use std::io::{BufRead, IsTerminal};
use trellis_model::api::{Me, TokenResponse};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  trellis login --url http://127.0.0.1:8080 --username admin\n  \
                        trellis login --url https://trellis.example.com --sso\n  echo \"$API_KEY\" | trellis login --url https://trellis.example.com --with-token --profile prod")]
pub struct LoginArgs {
    /// Sign in as this user (the password is asked for, or read from standard input)
    #[arg(long, short = 'u', conflicts_with_all = ["with_token", "sso"])]
    pub username: Option<String>,
    /// Sign in through the server's single sign-on provider (you confirm a code in a browser)
    #[arg(long, conflicts_with = "with_token")]
    pub sso: bool,
    /// Read an API key from standard input and keep it instead of signing in with a password
    #[arg(long)]
    pub with_token: bool,
}

pub async fn login(target: &Target, args: LoginArgs) -> CliResult<Exit> {
    let mut credentials = Credentials::load()?;
    let url = match (&target.url, credentials.profiles.get(&target.profile)) {
        (Some(url), _) => url.clone(),
        (None, Some(saved)) => saved.url.clone(),
        (None, None) => return Err(CliError::usage("which server? pass --url URL (or set TRELLIS_URL)")),
    };
    let anonymous = Api::new(&url, None)?;
    // `--token`/`TRELLIS_TOKEN` are never saved: a token left in the shell for one server would
    // otherwise be sent to whichever server `--url` names. A key to keep comes on standard input.
    let mut profile = if args.with_token {
        let token = read_line("API key: ", false).await?;
        Profile { url: anonymous.base.clone(), token, username: None, expires_at: None }
    } else if args.sso {
        super::sso_login::sso_login(&anonymous).await?
    } else {
        password_login(&anonymous, args.username.clone()).await?
    };
    let me: Me = Api::new(&profile.url, Some(profile.token.clone()))?
        .get("/auth/me", &[])
        .await
        .map_err(|e| key_refused(e, &profile.url))?;
    profile.username = Some(me.username.clone());
    let server = profile.url.clone();
    credentials.profiles.insert(target.profile.clone(), profile);
    let path = credentials.save()?;
    say!(
        "signed in to {server} as {} ({}); profile `{}` saved in {}",
        me.username,
        me.role,
        target.profile,
        path.display()
    );
    Ok(Exit::Success)
}

/// Signs in with a username and password; the answer's access token is what is kept.
async fn password_login(api: &Api, username: Option<String>) -> CliResult<Profile> {
    let username = match username {
        Some(name) => name,
        None => read_line("username: ", false).await?,
    };
    let password = read_line("password: ", true).await?;
    let body = serde_json::json!({"username": username, "password": password});
    let answer: TokenResponse =
        api.post("/auth/login", &body).await.map_err(|e| sign_in_refused(e, &api.base, &username))?;
    let expires_at = Utc::now() + chrono::Duration::seconds(answer.expires_in.min(i64::MAX as u64) as i64);
    Ok(Profile {
        url: api.base.clone(),
        token: answer.access_token,
        username: Some(username),
        expires_at: Some(expires_at),
    })
}

// The general hints of a refusal (`api::refusal`) tell someone to run `trellis login`: here
// they are running it, so a refused sign-in says what to change instead.

/// A refused sign-in: the password, the address, or the server's own reason.
fn sign_in_refused(error: CliError, server: &str, username: &str) -> CliError {
    let message = match error.status {
        Some(401) => format!(
            "{server} refused the username `{username}` with that password; check both and sign in again (an admin \
             can reset it with `trellis user passwd {username}` on the server)"
        ),
        Some(404 | 405) => format!(
            "{server} has no Trellis sign-in ({}); check --url: it is the address the web app is served at",
            error.status.unwrap_or_default()
        ),
        _ => return error,
    };
    CliError { message, ..error }
}

/// A refused API key (`--with-token`): the key, or the address.
fn key_refused(error: CliError, server: &str) -> CliError {
    let message = match error.status {
        Some(401) => format!(
            "{server} does not accept this API key (wrong, revoked or expired); pipe in a current key, or sign in with \
             --username instead"
        ),
        Some(404 | 405) => format!("{server} is not a Trellis server (no /api/v1/auth/me); check --url"),
        _ => return error,
    };
    CliError { message, ..error }
}

pub async fn logout(target: &Target) -> CliResult<Exit> {
    let mut credentials = Credentials::load()?;
    let Some(profile) = credentials.profiles.remove(&target.profile) else {
        say!("not signed in (no profile `{}`)", target.profile);
        return Ok(Exit::Success);
    };
    if profile.expires_at.is_some() {
        // A session token: end it on the server too. Best effort: the credential is
        // forgotten here whether or not the server can be reached.
        if let Ok(api) = Api::new(&profile.url, Some(profile.token.clone())) {
            let _ = api.call(api.request(Method::POST, "/auth/logout").json(&serde_json::json!({}))).await;
        }
    }
    credentials.save()?;
    say!("signed out of {} (profile `{}`)", profile.url, target.profile);
    Ok(Exit::Success)
}

/// One line from standard input, after `prompt` on a terminal; a password is not echoed.
async fn read_line(prompt: &str, secret: bool) -> CliResult<String> {
    let stdin = std::io::stdin();
    let on_terminal = stdin.is_terminal();
    if on_terminal {
        eprint!("{prompt}");
    }
    let read = if secret && on_terminal {
        read_hidden_line().await
    } else {
        let mut line = String::new();
        stdin.lock().read_line(&mut line).map(|_| line)
    };
    let line =
        read.map_err(|e| CliError::usage(format!("cannot read {}: {e}", prompt.trim_end_matches([':', ' ']))))?;
    let value = line.trim_end_matches(['\r', '\n']).to_owned();
    if value.is_empty() {
        return Err(CliError::usage(format!("no {} given on standard input", prompt.trim_end_matches([':', ' ']))));
    }
    Ok(value)
}
