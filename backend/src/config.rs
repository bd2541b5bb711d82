//! Server settings. Every flag has an environment variable, so containers configure
//! Trellis without a config file; the defaults give a working embedded (SQLite) server.

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/trellis.db";
/// How long an HTTP request waits in line for a sandbox worker by default: a few seconds, well
/// under a client's patience, then a 503 it may retry.
pub const SANDBOX_REQUEST_WAIT_MS: u64 = 3_000;

/// Where the data lives; shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct DatabaseConfig {
    /// `sqlite://PATH` (created on first start) or `postgres://...`.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true)]
    pub database_url: String,
    /// Connections in the pool.
    #[arg(long, env = "TRELLIS_DB_MAX_CONNECTIONS", default_value_t = 16, global = true)]
    pub db_max_connections: u32,
    /// How long a request waits for a pooled connection before it is answered 503 with
    /// `Retry-After`, in ms.
    #[arg(long, env = "TRELLIS_DB_ACQUIRE_TIMEOUT_MS", default_value_t = 5_000, global = true)]
    pub db_acquire_timeout_ms: u64,
    /// `transaction`: `DATABASE_URL` goes through a connection pooler in transaction mode
    /// (PgBouncer), so nothing outlives a transaction on a connection. Default: `transaction`
    /// when `TRELLIS_DIRECT_DATABASE_URL` is set, else `none`.
    #[arg(long, env = "TRELLIS_DATABASE_POOLER", value_enum, global = true)]
    pub database_pooler: Option<Pooler>,
    /// With a pooler in front of Postgres: a URL straight to it, for LISTEN/NOTIFY (one
    /// connection per process) and migrations.
    #[arg(long, env = "TRELLIS_DIRECT_DATABASE_URL", hide_env_values = true, global = true)]
    pub direct_database_url: Option<String>,
    /// The master key sealing every secret's data key: 32 bytes as base64 or hex. Unset: the
    /// key file is used (made on first start). Every process sharing a database needs the same.
    #[arg(long, env = "TRELLIS_MASTER_KEY", hide_env_values = true, hide = true, global = true, value_parser = secret_text)]
    pub master_key: Option<secrecy::SecretString>,
    /// Where the master key file is (unset: `master.key` beside the SQLite database, or in this
    /// user's data folder for Postgres).
    #[arg(long, env = "TRELLIS_MASTER_KEY_FILE", global = true)]
    pub master_key_file: Option<PathBuf>,
}

/// What sits between Trellis and Postgres.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Pooler {
    /// Nothing, or a pooler in session mode.
    None,
    /// A pooler in transaction mode (PgBouncer `pool_mode = transaction`).
    Transaction,
}

impl DatabaseConfig {
    /// `TRELLIS_DIRECT_DATABASE_URL` when set (straight to Postgres, past a pooler), else
    /// `DATABASE_URL`: for what one long session needs (backups, restores, checks).
    pub fn direct_url(&self) -> &str {
        self.direct_database_url.as_deref().filter(|u| !u.trim().is_empty()).unwrap_or(&self.database_url)
    }

    /// `url` with `max_connections`, straight to the database (tests, tools).
    pub fn direct(url: &str, max_connections: u32) -> DatabaseConfig {
        DatabaseConfig {
            database_url: url.to_owned(),
            db_max_connections: max_connections,
            db_acquire_timeout_ms: 5_000,
            database_pooler: None,
            direct_database_url: None,
            master_key: None,
            master_key_file: None,
        }
    }

    /// Whether `DATABASE_URL` goes through a transaction-mode pooler (see `database_pooler`).
    pub fn behind_transaction_pooler(&self) -> bool {
        let direct_set = self.direct_database_url.as_deref().is_some_and(|u| !u.trim().is_empty());
        match self.database_pooler {
            Some(pooler) => pooler == Pooler::Transaction,
            None => direct_set,
        }
    }
}

/// A flag's text kept as a secret (never in `Debug` output, wiped on drop).
fn secret_text(text: &str) -> Result<secrecy::SecretString, std::convert::Infallible> {
    Ok(text.into())
}

#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address to listen on; port 0 picks a free port (logged as `listening on ADDR`).
    #[arg(long, env = "TRELLIS_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Serve the web app from this folder (`cargo xtask spa` writes `dist/`) instead of the
    /// one built into the binary: for working on the app.
    #[arg(long, env = "TRELLIS_WEB_DIR")]
    pub web_dir: Option<PathBuf>,
    /// Secret for signing access tokens. Unset: one is generated once and kept in the
    /// database, so every process sharing the database accepts the same tokens.
    #[arg(long, env = "TRELLIS_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// Lifetime of access tokens and the session cookie, in seconds.
    #[arg(long, env = "TRELLIS_TOKEN_TTL_SECS", default_value_t = 12 * 3600)]
    pub token_ttl_secs: u64,
    /// Largest request body accepted, in bytes.
    #[arg(long, env = "TRELLIS_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Mark the session cookie `Secure`; turn on when serving over HTTPS.
    #[arg(long, env = "TRELLIS_SECURE_COOKIES", default_value_t = false)]
    pub secure_cookies: bool,
    /// The bootstrap admin's password on an empty database; random (and printed) if unset.
    #[arg(long, env = "TRELLIS_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,
    /// Node attempts this process runs at once.
    #[arg(long, env = "TRELLIS_WORKERS", default_value_t = 64)]
    pub workers: usize,
    /// CIDRs `http` nodes may reach besides public addresses (comma-separated).
    #[arg(long, env = "TRELLIS_HTTP_ALLOW", default_value = "")]
    pub http_allow: String,
    /// Largest instance input, in bytes.
    #[arg(long, env = "TRELLIS_MAX_INPUT_BYTES", default_value_t = 256 * 1024)]
    pub max_input_bytes: usize,
    /// Largest output one node may store, in bytes (JSON); a larger one fails the node.
    /// 2 MiB holds the largest response an `http` node reads (1 MiB) with its headers.
    #[arg(long, env = "TRELLIS_MAX_NODE_OUTPUT_BYTES", default_value_t = 2 * 1024 * 1024)]
    pub max_node_output_bytes: usize,
    /// Largest total of one instance's node outputs, in bytes (JSON); the node that would
    /// pass it fails. Bounds what `GET /instances/{id}` returns.
    #[arg(long, env = "TRELLIS_MAX_INSTANCE_OUTPUT_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub max_instance_output_bytes: usize,
    /// The most items a `map` node runs over; a longer list fails the node, naming the cap.
    #[arg(long, env = "TRELLIS_MAP_MAX_ITEMS", default_value_t = trellis_model::map::DEFAULT_MAX_ITEMS)]
    pub map_max_items: usize,
    /// Batches of transitions this process commits at once on Postgres (1 to 16; default 2).
    /// SQLite has one writer, so it always uses one.
    #[arg(long, env = "TRELLIS_COMMIT_LANES")]
    pub commit_lanes: Option<usize>,
    /// How long a claim on work lasts before another process may take it over, in ms.
    #[arg(long, env = "TRELLIS_LEASE_MS", default_value_t = 30_000)]
    pub lease_ms: u64,
    /// On SIGTERM, how long running node attempts may take to finish, in seconds.
    #[arg(long, env = "TRELLIS_DRAIN_SECS", default_value_t = 20)]
    pub drain_secs: u64,
    /// OTLP/HTTP endpoint to export execution spans to (e.g. `http://collector:4318`);
    /// unset: no export.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otel_endpoint: Option<String>,
    /// How often a live event stream rereads the history without news, in ms: the backstop
    /// for a missed cross-process announcement.
    #[arg(long, env = "TRELLIS_SSE_RESYNC_MS", default_value_t = 5_000)]
    pub sse_resync_ms: u64,
    /// How often an open event stream checks that its credential still holds, in ms: a
    /// signed-out, demoted or deleted user's streams end within this.
    #[arg(long, env = "TRELLIS_SSE_REAUTH_MS", default_value_t = 30_000)]
    pub sse_reauth_ms: u64,
    /// Largest webhook body accepted at `/hooks/{id}`, in bytes (413 beyond).
    #[arg(long, env = "TRELLIS_WEBHOOK_MAX_BODY_BYTES", default_value_t = 256 * 1024)]
    pub webhook_max_body_bytes: usize,
    /// The server's address as webhook senders reach it (e.g. `https://trellis.example.com`),
    /// for the `url` of webhook triggers; unset, the request's `Host` is used.
    #[arg(long, env = "TRELLIS_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// How often the retention sweeper deletes expired finished instances, in seconds.
    #[arg(long, env = "TRELLIS_RETENTION_SWEEP_SECS", default_value_t = 60)]
    pub retention_sweep_secs: u64,
    /// Who may read `/metrics`: `public` (anyone), `token` (a bearer credential: any API
    /// key or sign-in token, or `TRELLIS_METRICS_TOKEN`), or `off` (404).
    #[arg(long, env = "TRELLIS_METRICS", value_enum, default_value_t = MetricsAccess::Token)]
    pub metrics: MetricsAccess,
    /// A bearer token only for scraping `/metrics` (with `TRELLIS_METRICS=token`).
    #[arg(long, env = "TRELLIS_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// The server runs behind a reverse proxy that appends the client's address to
    /// `X-Forwarded-For`: sign-in throttling then counts per that address (the rightmost),
    /// not per the proxy's.
    #[arg(long, env = "TRELLIS_BEHIND_PROXY", default_value_t = false)]
    pub behind_proxy: bool,
    /// Sandbox worker processes scripts may occupy at once (default: one per core); the pool
    /// keeps a quarter as many more (at least one) that only expressions and templates use.
    #[arg(long, env = "TRELLIS_SANDBOX_WORKERS")]
    pub sandbox_workers: Option<usize>,
    /// Memory one sandbox worker may allocate for user code, in MiB (a script's own
    /// `memory_mb` holds within it).
    #[arg(long, env = "TRELLIS_SANDBOX_MEMORY_MB", default_value_t = 256)]
    pub sandbox_memory_mb: u64,
    /// Wall-clock deadline of one evaluation of a node's expressions (and of a check), in
    /// ms; past it the worker is killed and the attempt fails.
    #[arg(long, env = "TRELLIS_SANDBOX_TIMEOUT_MS", default_value_t = 10_000)]
    pub sandbox_timeout_ms: u64,
    /// How long an HTTP request (a start's concurrency key, a validation, a preview) waits in
    /// line for a sandbox worker before it answers 503 with `Retry-After`, in ms.
    #[arg(long, env = "TRELLIS_SANDBOX_REQUEST_WAIT_MS", default_value_t = SANDBOX_REQUEST_WAIT_MS)]
    pub sandbox_request_wait_ms: u64,
    /// The program sandbox workers run (`PROGRAM sandbox-worker`); default: this binary.
    #[arg(long, env = "TRELLIS_SANDBOX_WORKER")]
    pub sandbox_worker: Option<PathBuf>,
    /// A running node without `stuck_after_ms` is slow past this many times the p95 of its
    /// last 100 successful durations (k; with at least 20 of them).
    #[arg(long, env = "TRELLIS_SLOW_FACTOR", default_value_t = 3.0)]
    pub slow_factor: f64,
    /// A node judged by its p95 is never slow before this many ms.
    #[arg(long, env = "TRELLIS_SLOW_FLOOR_MS", default_value_t = 1_000)]
    pub slow_floor_ms: u64,
    /// How often the p95 thresholds of running nodes are recomputed, in ms.
    #[arg(long, env = "TRELLIS_SLOW_REFRESH_MS", default_value_t = 30_000)]
    pub slow_refresh_ms: u64,
    /// One alert delivery attempt's deadline, in ms.
    #[arg(long, env = "TRELLIS_ALERT_TIMEOUT_MS", default_value_t = 10_000)]
    pub alert_timeout_ms: u64,
    /// The wait before an alert delivery's second attempt, in ms; doubled for each later one.
    #[arg(long, env = "TRELLIS_ALERT_BACKOFF_MS", default_value_t = 5_000)]
    pub alert_backoff_ms: u64,
    /// Alert deliveries one process posts at once.
    #[arg(long, env = "TRELLIS_ALERT_CONCURRENCY", default_value_t = 8)]
    pub alert_concurrency: usize,
    /// How often due alert deliveries are looked for and `slow` and `queue_depth` rules
    /// judged, in ms.
    #[arg(long, env = "TRELLIS_ALERT_POLL_MS", default_value_t = 1_000)]
    pub alert_poll_ms: u64,
    /// Local users may sign in with a password; `false` leaves single sign-on the only way
    /// in for people (API keys keep working).
    #[arg(long, env = "TRELLIS_PASSWORD_LOGIN", default_value_t = true, action = clap::ArgAction::Set)]
    pub password_login: bool,
    #[command(flatten)]
    pub oidc: OidcArgs,
    #[command(flatten)]
    pub backups: BackupArgs,
}

/// Backups the server takes itself (`crate::cluster::schedule`).
#[derive(Debug, Clone, Args)]
pub struct BackupArgs {
    /// A folder to write backups into on a schedule; unset: the server takes none.
    #[arg(long = "backup-dir", env = "TRELLIS_BACKUP_DIR")]
    pub dir: Option<PathBuf>,
    /// How often (`30m`, `6h`, `1d`). Processes sharing a database take each backup once.
    #[arg(long = "backup-every", env = "TRELLIS_BACKUP_EVERY", default_value = "1d", value_parser = humantime::parse_duration)]
    pub every: std::time::Duration,
    /// How many of the newest scheduled backups the folder keeps (older ones are deleted).
    #[arg(long = "backup-keep", env = "TRELLIS_BACKUP_KEEP", default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..))]
    pub keep: u32,
}

/// Single sign-on through an OpenID Connect provider, as given; `auth::oidc::OidcSettings`
/// checks and reads them.
#[derive(Debug, Clone, Default, Args)]
pub struct OidcArgs {
    /// The provider's issuer URL (its discovery document is `{issuer}/.well-known/openid-configuration`);
    /// unset: no single sign-on.
    #[arg(long = "oidc-issuer", env = "TRELLIS_OIDC_ISSUER")]
    pub issuer: Option<String>,
    #[arg(long = "oidc-client-id", env = "TRELLIS_OIDC_CLIENT_ID")]
    pub client_id: Option<String>,
    #[arg(long = "oidc-client-secret", env = "TRELLIS_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub client_secret: Option<String>,
    /// What the sign-in button calls the provider ("Sign in with NAME").
    #[arg(long = "oidc-name", env = "TRELLIS_OIDC_NAME", default_value = "SSO")]
    pub name: String,
    /// Scopes asked for, space-separated (`openid` is always asked).
    #[arg(long = "oidc-scopes", env = "TRELLIS_OIDC_SCOPES", default_value = "openid profile email")]
    pub scopes: String,
    /// Where the user's groups are in the ID token (or userinfo): a dot path such as `realm_access.roles`.
    #[arg(long = "oidc-groups-claim", env = "TRELLIS_OIDC_GROUPS_CLAIM", default_value = "groups")]
    pub groups_claim: String,
    /// `group=role` pairs, comma-separated (`trellis-admins=admin,ops=operator`).
    #[arg(long = "oidc-role-map", env = "TRELLIS_OIDC_ROLE_MAP", default_value = "")]
    pub role_map: String,
    /// The role of a user none of whose groups is mapped; unset: such a user is refused.
    #[arg(long = "oidc-default-role", env = "TRELLIS_OIDC_DEFAULT_ROLE")]
    pub default_role: Option<String>,
    /// The longest a single sign-on session lasts, in seconds (providers do not tell when a
    /// user leaves a group: the next sign-in re-derives the role).
    #[arg(long = "oidc-session-secs", env = "TRELLIS_OIDC_SESSION_SECS", default_value_t = 12 * 3600)]
    pub session_secs: u64,
    /// A local user whose username is the provider's verified email becomes that SSO user at
    /// their first sign-in (their password stops working); off: such a sign-in is refused.
    #[arg(long = "oidc-link-local-users", env = "TRELLIS_OIDC_LINK_LOCAL_USERS", default_value_t = false, action = clap::ArgAction::Set)]
    pub link_local_users: bool,
}

/// Who may read `/metrics` (it names workflows and shows load).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricsAccess {
    Public,
    Token,
    Off,
}

impl ServeConfig {
    /// Settings for a server on a free loopback port: what tests and examples start from.
    pub fn local() -> Self {
        ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            web_dir: None,
            jwt_secret: None,
            token_ttl_secs: 3600,
            max_body_bytes: 1024 * 1024,
            secure_cookies: false,
            admin_password: None,
            workers: 16,
            http_allow: String::new(),
            max_input_bytes: 256 * 1024,
            max_node_output_bytes: 2 * 1024 * 1024,
            max_instance_output_bytes: 8 * 1024 * 1024,
            map_max_items: trellis_model::map::DEFAULT_MAX_ITEMS,
            lease_ms: 30_000,
            commit_lanes: None,
            drain_secs: 5,
            otel_endpoint: None,
            sse_resync_ms: 5_000,
            sse_reauth_ms: 30_000,
            webhook_max_body_bytes: 256 * 1024,
            public_url: None,
            retention_sweep_secs: 60,
            metrics: MetricsAccess::Token,
            metrics_token: None,
            behind_proxy: false,
            sandbox_workers: None,
            sandbox_memory_mb: 256,
            sandbox_timeout_ms: 10_000,
            sandbox_request_wait_ms: SANDBOX_REQUEST_WAIT_MS,
            sandbox_worker: None,
            slow_factor: 3.0,
            slow_floor_ms: 1_000,
            slow_refresh_ms: 30_000,
            alert_timeout_ms: 10_000,
            alert_backoff_ms: 5_000,
            alert_concurrency: 8,
            alert_poll_ms: 1_000,
            password_login: true,
            oidc: OidcArgs {
                name: "SSO".into(),
                scopes: "openid profile email".into(),
                groups_claim: "groups".into(),
                session_secs: 12 * 3600,
                ..OidcArgs::default()
            },
            backups: BackupArgs { dir: None, every: std::time::Duration::from_secs(86_400), keep: 7 },
        }
    }
}
