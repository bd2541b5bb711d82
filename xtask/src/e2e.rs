//! Runs the Playwright browser tests in `e2e/` against a real server binary with the SPA inside.

use crate::tools;
use crate::util::{output, run as run_cmd};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";

/// `server_bin` is the `trellis` binary the tests spawn, built with the SPA embedded: the
/// tests start it from a temporary directory, without `TRELLIS_WEB_DIR`.
pub fn run(root: &Path, server_bin: &Path) -> Result<()> {
    let e2e = root.join("e2e");
    // Playwright runs inside e2e/, so relative paths would point at the wrong place.
    let server_bin = std::path::absolute(server_bin)?;
    if !server_bin.is_file() {
        bail!("the server binary {} does not exist; build it first", server_bin.display());
    }

    for tool in ["node", "npm", "npx"] {
        if tools::find_on_path(tool).is_none() {
            bail!("`{tool}` was not found on PATH: the browser tests need Node.js 20 or newer with npm (e.g. `apt-get install nodejs npm`)");
        }
    }
    check_node_version()?;
    let chromium = ensure_chromium()?;

    if needs_npm_ci(&e2e) {
        // Playwright's own browser download is never used: the tests drive the system Chromium.
        run_cmd(Command::new("npm").arg("ci").current_dir(&e2e).env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"))?;
    }

    run_cmd(
        Command::new("npx")
            .args(["playwright", "test"])
            .current_dir(&e2e)
            .env("TRELLIS_BIN", &server_bin)
            .env_remove("TRELLIS_WEB_DIR")
            .env("CHROMIUM_PATH", &chromium)
            .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"),
    )
    .context("browser tests failed; screenshots and traces are in e2e/test-results/")
}

/// Chromium from `CHROMIUM_PATH`, /usr/bin/chromium or PATH; installed with apt when we may.
fn ensure_chromium() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM_PATH").map(PathBuf::from) {
        if tools::is_executable(&path) {
            return Ok(path);
        }
        bail!("CHROMIUM_PATH is set to {}, which is not an executable", path.display());
    }
    let found = || {
        let default = PathBuf::from(DEFAULT_CHROMIUM);
        if tools::is_executable(&default) {
            Some(default)
        } else {
            tools::find_on_path("chromium")
        }
    };
    if let Some(path) = found() {
        return Ok(path);
    }

    let has_apt = tools::find_on_path("apt-get").is_some();
    if !(has_apt && tools::is_root()) {
        bail!("Chromium was not found: install the `chromium` package (Debian/Ubuntu: `apt-get install chromium`) or set CHROMIUM_PATH to a Chromium or Chrome binary");
    }
    eprintln!("xtask: Chromium is missing; installing the `chromium` package with apt-get");
    run_cmd(Command::new("apt-get").arg("update"))?;
    run_cmd(Command::new("apt-get").args(["install", "-y", "chromium"]).env("DEBIAN_FRONTEND", "noninteractive"))?;
    found().context("apt-get installed `chromium` but no chromium binary was found")
}

/// `npm ci` is needed when nothing is installed yet or package-lock.json changed since the last install
/// (npm records each install in node_modules/.package-lock.json).
fn needs_npm_ci(e2e: &Path) -> bool {
    let installed = modified(&e2e.join("node_modules").join(".package-lock.json"));
    let wanted = modified(&e2e.join("package-lock.json"));
    match (installed, wanted) {
        (Some(installed), Some(wanted)) => wanted > installed,
        _ => true,
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    path.metadata().and_then(|m| m.modified()).ok()
}

/// Playwright 1.65 needs Node 20 or newer; an old distro Node fails later with an obscure syntax error.
fn check_node_version() -> Result<()> {
    let version = output(Command::new("node").arg("--version")).context("`node --version` failed")?;
    let major = version.trim().trim_start_matches('v').split('.').next().and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(major) if major >= 20 => Ok(()),
        _ => bail!("Node.js {} is too old for Playwright: install Node.js 20 or newer", version.trim()),
    }
}
