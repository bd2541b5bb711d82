//! Debian's PgBouncer, for the tests and benchmarks that run Trellis behind a transaction-mode
//! pooler: found at /usr/sbin/pgbouncer or on PATH, installed with apt when we may.

use crate::tools;
use crate::util::run as run_cmd;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;

/// The environment variable that tells the tests and the bench driver where it is.
pub const ENV: &str = "TRELLIS_TEST_PGBOUNCER";
const DEBIAN: &str = "/usr/sbin/pgbouncer";

/// PgBouncer's path, installing the `pgbouncer` package with apt-get when it is missing and
/// we are root; else an error saying what to install.
pub fn ensure() -> Result<PathBuf> {
    let found = || {
        let debian = PathBuf::from(DEBIAN);
        if tools::is_executable(&debian) {
            Some(debian)
        } else {
            tools::find_on_path("pgbouncer")
        }
    };
    if let Some(path) = found() {
        return Ok(path);
    }
    if !(tools::find_on_path("apt-get").is_some() && tools::is_root()) {
        bail!("PgBouncer was not found: install the `pgbouncer` package (Debian/Ubuntu: `apt-get install pgbouncer`); the pooler tests run it");
    }
    eprintln!("xtask: PgBouncer is missing; installing the `pgbouncer` package with apt-get");
    run_cmd(Command::new("apt-get").arg("update"))?;
    run_cmd(Command::new("apt-get").args(["install", "-y", "pgbouncer"]).env("DEBIAN_FRONTEND", "noninteractive"))?;
    found().context("apt-get installed `pgbouncer` but no pgbouncer binary was found")
}
