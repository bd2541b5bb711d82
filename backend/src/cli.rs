//! Command-line entry: parses arguments and runs one subcommand. `serve`, `migrate`, `user`,
//! `backup`, `restore` and `secrets` act on the database here; the client commands (`login`, `instance`, `workflow`,
//! `trigger`, `completions`) talk to a server over its HTTP API, in [`remote`].

pub mod remote;

use crate::auth::{password, Role};
use crate::config::{DatabaseConfig, ServeConfig};
use crate::store::{self, NewUser};
use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::io::BufRead;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(name = "trellis", version, about = "Trellis workflow designer and engine")]
struct Cli {
    #[command(flatten, next_help_heading = "Database (serve, migrate, user, backup, restore)")]
    db: DatabaseConfig,
    #[command(flatten, next_help_heading = "Server and output (client commands)")]
    target: remote::Target,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the API, the web app and the scheduler.
    Serve(Box<ServeConfig>),
    /// Apply database migrations and exit.
    Migrate {
        /// Apply the pending migrations to a copy instead and say how each went and how long
        /// it took; the database itself is not changed.
        #[arg(long)]
        check: bool,
    },
    /// Manage users.
    #[command(subcommand)]
    User(UserCommand),
    /// Back up the database while servers run, and check backups.
    #[command(subcommand)]
    Backup(crate::backup::BackupCommand),
    /// Restore a backup into DATABASE_URL, with every server on it stopped. The restored
    /// database is held (no schedules, no claims) until an admin runs `trellis cluster resume`.
    Restore {
        /// A file `trellis backup create` wrote
        file: std::path::PathBuf,
        /// Replace the database there (SQLite: kept as <file>.replaced-<time>; Postgres: the
        /// tables of its current schema are dropped)
        #[arg(long)]
        replace: bool,
    },
    /// Copy everything (runs and their history included) from one database into an empty one
    /// of the other kind: SQLite to Postgres to grow to many processes, or back. Run the same
    /// command again to go on after an interruption.
    Transfer {
        /// The database to copy, e.g. sqlite://data/trellis.db (read only)
        #[arg(long, value_name = "URL")]
        from: String,
        /// The empty database to copy into, e.g. postgres://trellis@db/trellis
        #[arg(long, value_name = "URL")]
        to: String,
    },
    /// Manage the secrets' master key.
    #[command(subcommand)]
    Secrets(SecretsCommand),
    /// Run user code for a server (started by `trellis serve`, not by people).
    #[command(hide = true)]
    SandboxWorker(crate::sandbox::worker::WorkerLimits),
    #[command(flatten)]
    Remote(Box<remote::RemoteCommand>),
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Create a user; the password is read from standard input (one line).
    Add {
        username: String,
        #[arg(long, default_value = "viewer")]
        role: String,
    },
    /// Set a user's password, read from standard input (one line).
    Passwd { username: String },
}

#[derive(Debug, Subcommand)]
enum SecretsCommand {
    /// Re-wrap every secret's data key under a new master key, in one transaction. Stop the
    /// servers first (they hold the old key); start them again with the new one.
    RotateMasterKey {
        /// The new key (32 bytes as base64 or hex). Unset: one is generated into the key file,
        /// and the old file is kept as `master.key.old`.
        #[arg(long, env = "TRELLIS_NEW_MASTER_KEY", hide_env_values = true, hide = true, value_parser = secret_text)]
        new_master_key: Option<secrecy::SecretString>,
    },
}

fn secret_text(text: &str) -> Result<secrecy::SecretString, std::convert::Infallible> {
    Ok(text.into())
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failure(e),
    };
    if let Command::SandboxWorker(limits) = cli.command {
        // Before logging or an async runtime: a worker starts no threads (see `sandbox::worker`).
        return crate::sandbox::worker::main(limits);
    }
    if let Command::Remote(command) = cli.command {
        // A client: no server logging, its own runtime and exit codes (see `remote`).
        return remote::main(cli.target, *command);
    }
    if matches!(cli.command, Command::Serve(_)) {
        crate::server::init_tracing();
    } else {
        crate::server::init_tracing_to_stderr();
    }
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trellis: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `--help` and `--version` print as clap prints them; a wrong command line is one error line
/// like every other (see `remote::failure::usage_line`), exiting 2 (clap's usage code).
fn parse_failure(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            error.exit()
        }
        _ => {
            eprintln!("{}", remote::failure::usage_line(&error.render().to_string(), &typed_command()));
            remote::failure::Exit::Usage.into()
        }
    }
}

/// The command as typed, up to its first flag (`trellis instance list`): the help a usage
/// error points to when clap names none.
fn typed_command() -> String {
    let words: Vec<String> = std::env::args().skip(1).take_while(|a| !a.starts_with('-')).take(2).collect();
    std::iter::once("trellis".to_owned()).chain(words).collect::<Vec<_>>().join(" ")
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Serve(serve) => crate::server::serve(cli.db, *serve).await,
        Command::Migrate { check: true } => {
            let checked = crate::upgrade::check(&cli.db).await?;
            crate::upgrade::print(&store::redact_url(&cli.db.database_url), &checked, cli.target.output)
        }
        Command::Migrate { check: false } => {
            store::connect(&cli.db).await?;
            println!("migrations applied to {}", store::redact_url(&cli.db.database_url));
            Ok(())
        }
        Command::User(cmd) => user(cli.db, cmd).await,
        Command::Backup(cmd) => crate::backup::run(&cli.db, cmd, cli.target.output).await,
        Command::Transfer { from, to } => {
            let report = crate::transfer::transfer(&from, &to).await?;
            crate::transfer::print(&report, cli.target.output)
        }
        Command::Restore { file, replace } => {
            let restored = crate::backup::restore::restore(&cli.db, &file, replace).await?;
            crate::backup::restore::print(&file, &restored, cli.target.output)
        }
        Command::Secrets(SecretsCommand::RotateMasterKey { new_master_key }) => {
            use secrecy::ExposeSecret;
            let store = store::connect(&cli.db).await?;
            let new = new_master_key.as_ref().map(ExposeSecret::expose_secret);
            println!("{}", crate::secrets::rotate_master_key(store, &cli.db, new).await?);
            Ok(())
        }
        Command::SandboxWorker(_) | Command::Remote(_) => {
            bail!("`sandbox-worker` and the client commands run before the server's runtime (see `main`)")
        }
    }
}

async fn user(db: DatabaseConfig, cmd: UserCommand) -> Result<()> {
    let store = store::connect(&db).await?;
    match cmd {
        UserCommand::Add { username, role } => {
            let role: Role = role.parse().map_err(anyhow::Error::msg)?;
            crate::auth::check_username(&username).map_err(anyhow::Error::msg)?;
            let hash = password::hash(read_password()?).await?;
            let user = NewUser::new(&username, hash, role);
            if !store.insert_user(&user).await? {
                bail!("a user named `{username}` already exists");
            }
            println!("created user {username} ({role})");
        }
        UserCommand::Passwd { username } => {
            let hash = password::hash(read_password()?).await?;
            if !store.set_password(&username, &hash).await? {
                bail!("no user named `{username}`");
            }
            println!("password changed for {username}");
        }
    }
    Ok(())
}

fn read_password() -> Result<String> {
    eprint!("password: ");
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).context("reading the password from stdin")?;
    let password = line.trim_end_matches(['\r', '\n']).to_owned();
    password::check_strength(&password).map_err(anyhow::Error::msg)?;
    Ok(password)
}
