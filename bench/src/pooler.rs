//! A PgBouncer in transaction mode in front of the benchmark's Postgres (`--only scale`):
//! Debian's `pgbouncer` (`TRELLIS_TEST_PGBOUNCER`, set by `cargo xtask bench`) on a free
//! loopback port, with a generated ini in a folder of its own.

use anyhow::{bail, Context, Result};
use sqlx::postgres::PgConnectOptions;
use std::path::PathBuf;
use std::process::Stdio;
use std::str::FromStr;
use std::time::Duration;
use tokio::process::{Child, Command};

/// Server connections PgBouncer keeps per database (its default).
pub const POOL_SIZE: u32 = 20;

pub struct Bouncer {
    _child: Child,
    port: u16,
    dir: PathBuf,
}

impl Bouncer {
    /// Starts PgBouncer in front of the server `direct_url` names, and waits until it listens.
    pub async fn start(direct_url: &str) -> Result<Bouncer> {
        let server = PgConnectOptions::from_str(direct_url)?;
        let dir = std::env::temp_dir().join(format!("trellis-bench-pgbouncer-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let ini = format!(
            "[databases]\n* = host={} port={} user={}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
             unix_socket_dir =\nauth_type = any\npool_mode = transaction\ndefault_pool_size = {POOL_SIZE}\n\
             max_client_conn = 1000\nlogfile = {}\npidfile = {}\n",
            server.get_host(),
            server.get_port(),
            server.get_username(),
            dir.join("pgbouncer.log").display(),
            dir.join("pgbouncer.pid").display(),
        );
        std::fs::write(dir.join("pgbouncer.ini"), ini)?;
        use std::os::unix::fs::PermissionsExt;
        // Written to (log, pid) by the user PgBouncer runs as.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))?;
        let child = spawn(&dir.join("pgbouncer.ini"))?;
        let bouncer = Bouncer { _child: child, port, dir };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Ok(bouncer);
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        bail!("PgBouncer did not listen on {port}; see {}", bouncer.dir.join("pgbouncer.log").display())
    }

    /// `direct_url`'s database through this PgBouncer.
    pub fn url_for(&self, direct_url: &str) -> Result<String> {
        let options = PgConnectOptions::from_str(direct_url)?;
        let database = options.get_database().context("the URL names its database")?;
        Ok(format!("postgres://{}@127.0.0.1:{}/{database}", options.get_username(), self.port))
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// PgBouncer refuses to run as root: as root, it runs as the `postgres` user.
fn spawn(ini: &std::path::Path) -> Result<Child> {
    let program = std::env::var_os("TRELLIS_TEST_PGBOUNCER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/pgbouncer"));
    let mut command = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=postgres", "--regid=postgres", "--clear-groups"]).arg(&program);
        c
    } else {
        Command::new(&program)
    };
    command.arg(ini).stdout(Stdio::null()).stderr(Stdio::null()).kill_on_drop(true);
    command.spawn().with_context(|| format!("starting {} (apt-get install pgbouncer)", program.display()))
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}
