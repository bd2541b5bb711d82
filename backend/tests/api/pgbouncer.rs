//! A PgBouncer of the test's own, in transaction mode, in front of the test Postgres: Debian's
//! `pgbouncer` on a free loopback port with a generated ini (`cargo xtask test` installs it).

use sqlx::postgres::PgConnectOptions;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
use std::time::Duration;
use tokio::process::{Child, Command};

pub struct Bouncer {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Bouncer {
    /// Starts PgBouncer with `pool_size` server connections per database, and waits until
    /// it accepts connections.
    pub async fn start(pool_size: u32) -> Bouncer {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        write_ini(dir.path(), port, pool_size);
        let child = spawn(dir.path()).await;
        let bouncer = Bouncer { child, port, dir };
        bouncer.wait_until_listening().await;
        bouncer
    }

    /// `direct_url` (a database on the test Postgres) as reached through this PgBouncer.
    pub fn url_for(&self, direct_url: &str) -> String {
        let options = PgConnectOptions::from_str(direct_url).unwrap();
        let database = options.get_database().expect("the URL names its database");
        format!("postgres://{}@127.0.0.1:{}/{database}", options.get_username(), self.port)
    }

    /// Stops PgBouncer at once (every client and server connection dropped) and starts it
    /// again on the same port after `down`.
    pub async fn restart(&mut self, down: Duration) {
        self.child.kill().await.unwrap();
        tokio::time::sleep(down).await;
        self.child = spawn(self.dir.path()).await;
        self.wait_until_listening().await;
    }

    async fn wait_until_listening(&self) {
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let log = std::fs::read_to_string(self.dir.path().join("pgbouncer.log")).unwrap_or_default();
        panic!("PgBouncer did not listen on {}: {log}", self.port);
    }
}

/// `TRELLIS_TEST_PGBOUNCER` (set by `cargo xtask test`), where Debian installs it, or `PATH`.
fn program() -> PathBuf {
    if let Some(path) = std::env::var_os("TRELLIS_TEST_PGBOUNCER") {
        return PathBuf::from(path);
    }
    let debian = PathBuf::from("/usr/sbin/pgbouncer");
    if debian.exists() {
        return debian;
    }
    let found = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("pgbouncer")).find(|p| p.exists()));
    found.unwrap_or_else(|| panic!("these tests need PgBouncer: `apt-get install pgbouncer` (cargo xtask test does)"))
}

/// PgBouncer refuses to run as root: as root, it runs as the `postgres` user.
async fn spawn(dir: &Path) -> Child {
    let ini = dir.join("pgbouncer.ini");
    let mut command = if nix_is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=postgres", "--regid=postgres", "--clear-groups"]).arg(program());
        c
    } else {
        Command::new(program())
    };
    command.arg(&ini).stdout(Stdio::null()).stderr(Stdio::null()).kill_on_drop(true);
    command.spawn().expect("PgBouncer starts")
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

/// Trust to the test Postgres as its user, transaction pooling, no TLS.
fn write_ini(dir: &Path, port: u16, pool_size: u32) {
    let admin = std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| crate::common::DEFAULT_POSTGRES.to_owned());
    let server = PgConnectOptions::from_str(&admin).unwrap();
    let ini = format!(
        "[databases]\n* = host={host} port={server_port} user={user}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\n\
         listen_port = {port}\nunix_socket_dir =\nauth_type = any\npool_mode = transaction\n\
         default_pool_size = {pool_size}\nmin_pool_size = 0\nreserve_pool_size = 0\nmax_client_conn = 1000\n\
         query_wait_timeout = 10\n\
         server_login_retry = 1\nlogfile = {log}\npidfile = {pid}\n",
        host = server.get_host(),
        server_port = server.get_port(),
        user = server.get_username(),
        log = dir.join("pgbouncer.log").display(),
        pid = dir.join("pgbouncer.pid").display(),
    );
    std::fs::write(dir.join("pgbouncer.ini"), ini).unwrap();
    // Readable and writable (log, pid) by the user PgBouncer runs as.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
