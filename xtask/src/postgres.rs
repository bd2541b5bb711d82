//! Finding (or starting) the Postgres server the tests run against.
//!
//! Order: `TEST_DATABASE_URL` (default the local server) if it answers; else the machine's
//! own cluster started with `pg_ctlcluster`; else a throwaway server made with
//! `initdb`/`pg_ctl` in a temporary folder; else a clear error saying what is missing.

use crate::util::{output, run};
use anyhow::{bail, Context, Result};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
const THROWAWAY_PORT: u16 = 54329;

/// A URL of a reachable Postgres server for the tests.
pub fn ensure() -> Result<String> {
    let url = std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned());
    let (host, port) = host_port(&url);
    if reachable(&host, port) {
        return Ok(url);
    }
    eprintln!("xtask: no Postgres answers at {host}:{port}; trying to start one");
    if start_system_cluster() && wait_until_reachable(&host, port) {
        return Ok(url);
    }
    if let Some(url) = start_throwaway()? {
        return Ok(url);
    }
    bail!(
        "the Postgres tests need a server and none is reachable at {host}:{port}.\n  \
         Set TEST_DATABASE_URL=postgres://USER@HOST:PORT/DB, or install PostgreSQL \
         (Debian: apt-get install postgresql) so a throwaway server can be started with initdb."
    )
}

/// Drops the per-test databases left by earlier runs (each test makes a fresh one).
pub fn drop_test_databases(url: &str) {
    let list = "SELECT datname FROM pg_database WHERE datname LIKE 'trellis\\_test\\_%'";
    let Some(names) = output(Command::new("psql").args([url, "-Atc", list])) else {
        return;
    };
    for name in names.lines().filter(|n| !n.is_empty()) {
        let drop = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
        let _ = output(Command::new("psql").args([url, "-qc", &drop]));
    }
}

fn host_port(url: &str) -> (String, u16) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    match hostport.rsplit_once(':') {
        Some((host, port)) => (host.to_owned(), port.parse().unwrap_or(5432)),
        None if hostport.is_empty() => ("127.0.0.1".to_owned(), 5432),
        None => (hostport.to_owned(), 5432),
    }
}

fn reachable(host: &str, port: u16) -> bool {
    let Ok(addrs) = (host, port).to_socket_addrs() else { return false };
    addrs.into_iter().any(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).is_ok())
}

fn wait_until_reachable(host: &str, port: u16) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if reachable(host, port) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    false
}

/// Debian's packaged cluster, as installed on our CI machines.
fn start_system_cluster() -> bool {
    let Ok(entries) = std::fs::read_dir("/etc/postgresql") else { return false };
    entries.flatten().any(|version| {
        let version = version.file_name().to_string_lossy().into_owned();
        run(Command::new("pg_ctlcluster").args(["--skip-systemctl-redirect", &version, "main", "start"])).is_ok()
    })
}

fn start_throwaway() -> Result<Option<String>> {
    let Some(bin) = postgres_bin_dir() else { return Ok(None) };
    let dir = std::env::temp_dir().join(format!("trellis-pg-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let as_postgres = crate::tools::is_root();
    if as_postgres {
        // initdb refuses to run as root; the packaged `postgres` user owns the folder instead.
        run(Command::new("chown").args(["postgres", &dir.to_string_lossy()]))?;
    }
    let data = dir.join("data");
    let mut initdb = server_command(&bin.join("initdb"), as_postgres);
    initdb.args(["-D", &data.to_string_lossy(), "-U", "postgres", "--auth=trust", "-E", "UTF8"]);
    run(&mut initdb).context("initdb failed")?;
    let options = format!("-p {THROWAWAY_PORT} -k {} -c listen_addresses=127.0.0.1", dir.display());
    let mut start = server_command(&bin.join("pg_ctl"), as_postgres);
    start.args([
        "-D",
        &data.to_string_lossy(),
        "-o",
        &options,
        "-l",
        &dir.join("log").to_string_lossy(),
        "-w",
        "start",
    ]);
    run(&mut start).context("pg_ctl start failed")?;
    eprintln!("xtask: started a throwaway Postgres on 127.0.0.1:{THROWAWAY_PORT} in {}", dir.display());
    Ok(Some(format!("postgres://postgres@127.0.0.1:{THROWAWAY_PORT}/postgres")))
}

fn server_command(program: &Path, as_postgres: bool) -> Command {
    if as_postgres {
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"]).arg(program);
        cmd
    } else {
        Command::new(program)
    }
}

fn postgres_bin_dir() -> Option<PathBuf> {
    if let Some(path) = crate::tools::find_on_path("initdb") {
        return path.parent().map(Path::to_path_buf);
    }
    let mut versions: Vec<PathBuf> =
        std::fs::read_dir("/usr/lib/postgresql").ok()?.flatten().map(|e| e.path()).collect();
    versions.sort();
    versions.into_iter().rev().map(|v| v.join("bin")).find(|bin| bin.join("initdb").is_file())
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn host_and_port_come_from_the_url() {
        assert_eq!(host_port("postgres://postgres@127.0.0.1:5432/test"), ("127.0.0.1".into(), 5432));
        assert_eq!(host_port("postgres://u:p@db.internal/x?sslmode=disable"), ("db.internal".into(), 5432));
        assert_eq!(host_port("postgresql://localhost:6000"), ("localhost".into(), 6000));
    }
}
