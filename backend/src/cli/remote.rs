//! `trellis` as a client of a server: every command here talks to the HTTP API (never the
//! database), with the server and credential from `--url`/`--token`, the environment, or
//! the profile `trellis login` saved.
//!
//! * [`api`]: the typed HTTP client; [`failure`]: exit codes and the one error line.
//! * [`profiles`] and [`login`]: credentials kept in the user's config folder.
//! * [`render`]: tables for people, JSON and JSON lines for scripts.
//! * [`instances`], [`bulk`], [`watch`]: running and operating instances.
//! * [`workflows`], [`files`] and [`sync`]: definitions, and keeping them as files.
//! * [`triggers`]: webhooks and schedules.
//! * [`cluster`]: the processes serving a database, and resuming a restored one.
//! * [`approvals`]: what waits for my decision, and deciding it.

pub mod api;
pub mod approvals;
pub mod bulk;
pub mod cluster;
pub mod failure;
pub mod files;
mod hidden_input;
pub mod input;
pub mod instances;
pub mod list_filter;
pub mod login;
pub mod profiles;
pub mod render;
mod sso_login;
mod sso_loopback;
pub mod sync;
pub mod triggers;
pub mod watch;
pub mod workflows;

use clap::{Args, Subcommand};
use failure::{CliError, CliResult, Exit};
use render::Output;
use std::process::ExitCode;

/// Prints a line to stdout, ignoring a closed pipe (`trellis … | head` must not panic).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}
pub(crate) use say;

/// Which server, as whom, and how to print. Declared once on `trellis` itself and global, so
/// every client command takes these before or after its subcommand's name
/// (`trellis -o json instance list` = `trellis instance list -o json`).
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// The server's address, e.g. http://127.0.0.1:8080 [default: the profile's]
    #[arg(long, env = "TRELLIS_URL", global = true, value_name = "URL")]
    pub url: Option<String>,
    /// An API key (or access token) sent as `Authorization: Bearer` [default: the profile's]
    #[arg(long, env = "TRELLIS_TOKEN", global = true, hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<String>,
    /// The saved login to use (`trellis login --profile NAME`)
    #[arg(long, env = "TRELLIS_PROFILE", global = true, default_value = "default", value_name = "NAME")]
    pub profile: String,
    /// `table` for people, `json` (one document) or `jsonl` (one JSON value per line) for scripts
    #[arg(long, short = 'o', value_enum, global = true, default_value_t = Output::Table)]
    pub output: Output,
}

impl Target {
    pub fn connect(&self) -> CliResult<api::Api> {
        profiles::connect(self.url.as_deref(), self.token.as_deref(), &self.profile)
    }
}

/// The client commands, next to `serve`, `migrate` and `user`.
#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// Sign in to a server and keep the credential (0600) in your config folder.
    Login(login::LoginArgs),
    /// Forget a profile's credential (and end its session on the server).
    Logout,
    /// Start, find, follow and operate instances, one at a time or in bulk.
    #[command(subcommand_required = true)]
    Instance(instances::InstanceArgs),
    /// List, show, import, validate and publish workflows; keep them as files in git.
    #[command(subcommand_required = true)]
    Workflow(workflows::WorkflowArgs),
    /// Webhooks and schedules that start instances.
    #[command(subcommand_required = true)]
    Trigger(triggers::TriggerArgs),
    /// What waits for your decision: list, show, approve and reject approvals.
    #[command(subcommand_required = true)]
    Approval(approvals::ApprovalArgs),
    /// The processes serving the database and their releases; resume a restored (held) database.
    #[command(subcommand_required = true)]
    Cluster(cluster::ClusterArgs),
    /// Print a shell completion script: `trellis completions bash > ~/.local/share/bash-completion/completions/trellis`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Runs a client command on its own small runtime; prints one line on failure and exits
/// with the code that says what kind of failure it was.
pub fn main(target: Target, command: RemoteCommand) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("trellis: error: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&target, command)) {
        Ok(exit) => exit.into(),
        Err(e) => {
            eprintln!("trellis: error: {e}");
            e.exit.into()
        }
    }
}

async fn run(target: &Target, command: RemoteCommand) -> CliResult<Exit> {
    match command {
        RemoteCommand::Login(args) => login::login(target, args).await,
        RemoteCommand::Logout => login::logout(target).await,
        RemoteCommand::Instance(args) => instances::run(target, args).await,
        RemoteCommand::Workflow(args) => workflows::run(target, args).await,
        RemoteCommand::Trigger(args) => triggers::run(target, args).await,
        RemoteCommand::Cluster(args) => cluster::run(target, args).await,
        RemoteCommand::Approval(args) => approvals::run(target, args).await,
        RemoteCommand::Completions { shell } => {
            use clap::CommandFactory;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut super::Cli::command(), "trellis", &mut script);
            say!("{}", String::from_utf8_lossy(&script).trim_end());
            Ok(Exit::Success)
        }
    }
}

/// A usage error for an argument that does not parse.
pub fn bad_argument(what: &str, detail: impl std::fmt::Display) -> CliError {
    CliError::usage(format!("{what}: {detail}"))
}
