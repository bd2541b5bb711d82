//! Where a server and its credential come from: `--url`/`--token` (or `TRELLIS_URL`/
//! `TRELLIS_TOKEN`), else the profile `trellis login` saved in the user's config folder
//! (`$XDG_CONFIG_HOME/trellis/credentials.json`, readable by its owner alone).

use super::api::{normalize_url, Api};
use super::failure::{CliError, CliResult};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Overrides the folder the credentials live in (tests, and users with several setups).
pub const CONFIG_DIR_ENV: &str = "TRELLIS_CONFIG_DIR";
const FILE: &str = "credentials.json";

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Credentials {
    #[serde(default)]
    pub profiles: BTreeMap<String, Profile>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    pub url: String,
    pub token: String,
    /// Who signed in; `None` for an API key given with `--token`/`--with-token`.
    #[serde(default)]
    pub username: Option<String>,
    /// When a session token stops working; API keys have none.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
}

/// The folder holding the credentials file.
pub fn config_dir() -> CliResult<PathBuf> {
    if let Some(dir) = std::env::var_os(CONFIG_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    use etcetera::BaseStrategy;
    let strategy = etcetera::choose_base_strategy()
        .map_err(|e| CliError::usage(format!("cannot find your config folder ({e}); set {CONFIG_DIR_ENV}")))?;
    Ok(strategy.config_dir().join("trellis"))
}

impl Credentials {
    pub fn load() -> CliResult<Credentials> {
        let path = config_dir()?.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                CliError::usage(format!(
                    "{} is not a credentials file ({e}); delete it and sign in again",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Credentials::default()),
            Err(e) => Err(CliError::usage(format!("cannot read {}: {e}", path.display()))),
        }
    }

    /// Writes the file readable and writable by its owner alone (0600, in a 0700 folder),
    /// through a temporary file so a crash never leaves half a file.
    pub fn save(&self) -> CliResult<PathBuf> {
        let dir = config_dir()?;
        let fail = |e: std::io::Error| CliError::usage(format!("cannot write to {}: {e}", dir.display()));
        private_dir(&dir).map_err(fail)?;
        let path = dir.join(FILE);
        let temporary = dir.join(format!(".{FILE}.{}", std::process::id()));
        let text = serde_json::to_vec_pretty(self).map_err(|e| CliError::usage(e.to_string()))?;
        let mut file = private_file(&temporary).map_err(fail)?;
        file.write_all(&text).and_then(|()| file.sync_all()).map_err(fail)?;
        std::fs::rename(&temporary, &path).map_err(fail)?;
        Ok(path)
    }
}

#[cfg(unix)]
fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn private_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)
}

#[cfg(not(unix))]
fn private_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(path)
}

/// The server and credential a command uses: flags and environment first, then the profile.
/// A profile's token goes only to the server it was issued by.
pub fn connect(url: Option<&str>, token: Option<&str>, profile: &str) -> CliResult<Api> {
    let saved = Credentials::load()?.profiles.remove(profile);
    let url = match (url, &saved) {
        (Some(url), _) => normalize_url(url)?,
        (None, Some(saved)) => saved.url.clone(),
        (None, None) => {
            return Err(CliError::usage(format!(
                "no server given: pass --url URL, set TRELLIS_URL, or sign in with `trellis login --url URL{}`",
                if profile == "default" { String::new() } else { format!(" --profile {profile}") }
            )))
        }
    };
    let token = match (token, saved) {
        (Some(token), _) => Some(token.to_owned()),
        (None, Some(saved)) if normalize_url(&saved.url).ok().as_deref() == Some(url.as_str()) => Some(saved.token),
        _ => None,
    };
    Api::new(&url, token)
}
