//! Wiring: open the store, prepare auth, build the router, serve until shutdown.

use crate::alerts::AlertSettings;
use crate::auth::bootstrap;
use crate::auth::jwt::TokenKeys;
use crate::auth::oidc::{Oidc, OidcSettings};
use crate::config::{DatabaseConfig, ServeConfig};
use crate::engine::outputs::OutputCaps;
use crate::engine::{Engine, EngineConfig};
use crate::http::{self, AppState};
use crate::http_client::OutboundPolicy;
use crate::jobs::{retention::Sweeper, JobLoop};
use crate::sandbox::{Sandbox, SandboxSettings};
use crate::slow::SlowRule;
use crate::store;
use crate::triggers::fire::FireLoop;
use anyhow::{Context, Result};
use axum::serve::ListenerExt;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use trellis_model::Limits;

/// Logs to stdout; `RUST_LOG` sets the level (default `info`).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).try_init();
}

/// Logs to stderr, for the commands whose stdout is their answer (`-o json` must parse even
/// when sqlx warns of a slow statement); `RUST_LOG` sets the level (default `info`).
pub fn init_tracing_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).try_init();
}

/// A server bound to its listener, ready to be served.
pub struct Server {
    pub addr: SocketAddr,
    listener: TcpListener,
    app: axum::Router,
    engine: Arc<Engine>,
    fires: FireLoop,
    brokers: crate::triggers::brokers::BrokerLoop,
    jobs: JobLoop,
    sweeper: Sweeper,
    slow: crate::slow::Refresher,
    alerts: (crate::alerts::send::Sender, crate::alerts::watch::Watcher),
    drain: std::time::Duration,
    audit_writer: JoinHandle<()>,
    registry: crate::cluster::Registry,
    backups: Option<crate::cluster::schedule::Schedule>,
}

impl Server {
    /// The server's own store: on SQLite, writing through it takes this process's write turn,
    /// where a second connection would be a second writer.
    pub fn store(&self) -> store::DynStore {
        self.engine.store().clone()
    }

    pub async fn build(db: DatabaseConfig, serve: ServeConfig) -> Result<Server> {
        let store = store::connect(&db).await?;
        if store.transfer_unfinished().await? {
            anyhow::bail!(
                "this database is the target of a `trellis transfer` that has not finished: run the same transfer \
                 command again to finish it"
            );
        }
        // First: a wrong master key stops the start before anything else is set up.
        let secrets = crate::secrets::Vault::open(store.clone(), &db).await?;
        let secret = bootstrap::signing_secret(&store, serve.jwt_secret.as_deref()).await?;
        if let Some(password) = bootstrap::ensure_admin(&store, serve.admin_password.as_deref()).await? {
            announce_admin(&password);
        }
        let tokens = Arc::new(TokenKeys::new(secret.as_bytes(), serve.token_ttl_secs));
        let oidc = match OidcSettings::from_config(&serve).map_err(anyhow::Error::msg)? {
            Some(settings) => Some(Arc::new(Oidc::new(settings)?)),
            None => None,
        };
        let listener =
            TcpListener::bind(serve.listen).await.with_context(|| format!("cannot listen on {}", serve.listen))?;
        let addr = listener.local_addr()?;
        tracing::info!(database = store.backend(), url = %store::redact_url(&db.database_url), "database ready");
        http::resources::spa::announce(serve.web_dir.as_deref());
        let sandbox = Sandbox::start(SandboxSettings::from_config(&serve)?).await?;
        let hold = crate::cluster::Hold::default();
        let engine =
            Engine::new(store.clone(), engine_config(&serve, store.backend(), hold.clone())?, sandbox, secrets);
        // Before any loop starts: a held (restored) database must not act even once.
        let registry =
            crate::cluster::Registry::join(store.clone(), engine.process_id(), addr, store.backend(), hold.clone())
                .await?;
        let backups = crate::cluster::schedule::Schedule::from_args(
            &store,
            &db,
            &serve.backups,
            engine.process_id(),
            hold.clone(),
        );
        if let Some(endpoint) = serve.otel_endpoint.as_deref().filter(|e| !e.trim().is_empty()) {
            engine.bus.export_to(endpoint).context("OTEL_EXPORTER_OTLP_ENDPOINT")?;
        }
        tokio::spawn(engine.bus.clone().relay(store.clone()));
        let fires =
            FireLoop::new(store.clone(), engine.clone(), std::time::Duration::from_millis(serve.lease_ms.max(1_000)));
        let brokers = crate::triggers::brokers::BrokerLoop::new(store.clone(), engine.clone(), node_name(addr));
        let jobs =
            JobLoop::new(store.clone(), engine.clone(), std::time::Duration::from_millis(serve.lease_ms.max(1_000)));
        let sweeper = Sweeper::new(store.clone(), std::time::Duration::from_secs(serve.retention_sweep_secs))
            .held_by(hold.clone());
        let slow = crate::slow::Refresher::new(
            store.clone(),
            SlowRule::from_config(&serve),
            std::time::Duration::from_millis(serve.slow_refresh_ms),
        );
        let alerts = (
            crate::alerts::send::Sender::new(
                store.clone(),
                engine.config().http_allow.clone(),
                AlertSettings::from_config(&serve),
            )
            .held_by(hold.clone()),
            crate::alerts::watch::Watcher::new(
                store.clone(),
                serve.public_url.clone(),
                AlertSettings::from_config(&serve).every,
            )
            .held_by(hold.clone()),
        );
        let drain = std::time::Duration::from_secs(serve.drain_secs);
        let (audit, audit_writer) = crate::audit::AuditLog::start(store.clone());
        let sign_in = Arc::default();
        let state = AppState {
            store,
            engine: engine.clone(),
            tokens,
            serve: Arc::new(serve),
            limits: Limits::default(),
            audit,
            sign_in,
            oidc,
        };
        Ok(Server {
            addr,
            listener,
            app: http::router(state),
            engine,
            fires,
            brokers,
            jobs,
            sweeper,
            slow,
            alerts,
            drain,
            audit_writer,
            registry,
            backups,
        })
    }

    /// Serves and schedules until `shutdown` resolves; then stops taking requests and new
    /// work, lets running attempts finish (up to the drain period) and releases its leases.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()> + Send + 'static) -> Result<()> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let fires = tokio::spawn(self.fires.run(stopped.clone()));
        let brokers = tokio::spawn(self.brokers.run(stopped.clone()));
        let jobs = tokio::spawn(self.jobs.run(stopped.clone()));
        let sweeper = tokio::spawn(self.sweeper.run(stopped.clone()));
        let slow = tokio::spawn(self.slow.run(stopped.clone()));
        let (sender, watcher) = self.alerts;
        let alerts =
            (tokio::spawn(sender.run(stopped.clone(), self.drain)), tokio::spawn(watcher.run(stopped.clone())));
        // The heartbeat goes on (marked draining) until every loop below has stopped.
        let (finished, all_stopped) = tokio::sync::watch::channel(false);
        let registry = tokio::spawn(self.registry.run(stopped.clone(), all_stopped));
        let backups = self.backups.map(|schedule| tokio::spawn(schedule.run(stopped.clone())));
        let scheduler = tokio::spawn(self.engine.clone().run(stopped, self.drain));
        tracing::info!("listening on {}", self.addr);
        println!("Trellis is running at http://{}", self.addr);
        // Event streams write small frames: without TCP_NODELAY, Nagle's algorithm holds each
        // one back until the previous is acknowledged (up to 40 ms with delayed ACKs).
        let listener = self.listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "could not set TCP_NODELAY");
            }
        });
        // `into_make_service_with_connect_info` prepares the routes once (serving the Router
        // itself rebuilds its route table for every connection, about 50 KB each, held as
        // long as it is open) and gives handlers the peer address sign-in throttling counts.
        let app = self.app.into_make_service_with_connect_info::<SocketAddr>();
        let served = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
        let _ = stop.send(true);
        // Consumers first: each finishes the batch it took (its starts committed) and
        // acknowledges it before the scheduler stops.
        brokers.await?;
        scheduler.await?;
        fires.await?;
        jobs.await?;
        sweeper.await?;
        slow.await?;
        alerts.0.await?;
        alerts.1.await?;
        if let Some(backups) = backups {
            backups.await?;
        }
        // Last: the process leaves the cluster's list once it has stopped taking work.
        let _ = finished.send(true);
        registry.await?.leave().await;
        // The router (and with it the audit queue's sender) is gone: write out what is queued.
        if tokio::time::timeout(std::time::Duration::from_secs(5), self.audit_writer).await.is_err() {
            tracing::warn!("gave up writing the last audit rows");
        }
        served?;
        Ok(())
    }

    /// Serves in the background (tests and embedding); dropping the handle does not stop it.
    pub fn spawn(self) -> JoinHandle<Result<()>> {
        tokio::spawn(self.run(std::future::pending()))
    }
}

/// A name for this process that stays the same when it restarts on the same host and port
/// (a broker's persistent session is found again by it): hex of a hash of both.
fn node_name(addr: SocketAddr) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{}:{}", crate::engine::hostname(), addr.port()));
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

pub async fn serve(db: DatabaseConfig, serve: ServeConfig) -> Result<()> {
    raise_open_files_limit();
    Server::build(db, serve).await?.run(shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

fn engine_config(serve: &ServeConfig, backend: &str, hold: crate::cluster::Hold) -> Result<EngineConfig> {
    let http_allow =
        OutboundPolicy::parse(&serve.http_allow).map_err(|e| anyhow::anyhow!("TRELLIS_HTTP_ALLOW: {e}"))?;
    let output_caps =
        OutputCaps { node_bytes: serve.max_node_output_bytes, instance_bytes: serve.max_instance_output_bytes };
    Ok(EngineConfig {
        workers: serve.workers.max(1),
        lease_ms: serve.lease_ms.max(1_000),
        http_allow,
        max_input_bytes: serve.max_input_bytes,
        output_caps,
        map_max_items: serve.map_max_items.max(1),
        public_url: serve.public_url.clone(),
        hold,
        // SQLite has one writer at a time, so a second lane would only wait for it; on
        // Postgres two batches in flight overlap one's round trips with the other's commit.
        commit_lanes: match (backend, serve.commit_lanes) {
            ("postgres", Some(lanes)) => lanes.clamp(1, 16),
            ("postgres", None) => 2,
            _ => 1,
        },
    })
}

/// Every event-stream client holds a socket: take the hard limit on open files rather
/// than the often tiny default soft one.
fn raise_open_files_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open files limit"),
        Err(e) => tracing::warn!(error = %e, "could not raise the open files limit"),
    }
}

fn announce_admin(password: &str) {
    // Printed once, on the start that created the account; it is not stored anywhere.
    println!("\n  First start: created user `admin` with password `{password}`");
    println!("  Sign in and keep it safe; set TRELLIS_ADMIN_PASSWORD to choose it instead.\n");
    tracing::warn!("created the bootstrap admin; its password was printed above, once");
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = terminate => {} }
    tracing::info!("shutting down: finishing in-flight requests");
}
