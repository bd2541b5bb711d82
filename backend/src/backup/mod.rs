//! `trellis backup create | verify`: a consistent copy of the database, taken while servers run.
//!
//! - **SQLite**: the backup is itself a SQLite database, made by `VACUUM INTO` (see [`sqlite`]).
//!   It reads in one read transaction, which in WAL mode never blocks writers; the copy gets one
//!   extra table, `_trellis_backup`, holding the [`Manifest`].
//! - **Postgres**: the backup is an archive of every table in the schema Trellis migrates (those of
//!   `migrations/postgres/*.sql` and `_sqlx_migrations`), read in one `REPEATABLE READ READ ONLY`
//!   transaction (see [`archive`] for its format).
//!
//! Either way the [`Manifest`] says who made it (backend, schema version = highest applied
//! migration, time) and, per table, its row count and a SHA-256 digest of its rows. `verify`
//! recomputes both from the file, so a damaged, truncated or edited backup is refused (the digests
//! are checksums, not a signature: someone who rewrites the manifest too is not caught), and refuses
//! one made by a newer Trellis than this build. A backup is written under a temporary name, checked
//! the way `verify` checks it, and renamed only when whole (see [`files`]).
//!
//! Secrets are copied as they are stored, sealed: the master key (`TRELLIS_MASTER_KEY` or its key
//! file) is never read here, so a backup alone cannot open them.

pub mod archive;
pub mod files;
pub mod restore;
mod restore_pg;
pub mod sqlite;

use crate::cli::remote::render::Output;
use crate::config::DatabaseConfig;
use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use clap::Subcommand;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Names a Trellis backup, in the SQLite manifest and on an archive's first line.
pub const MAGIC: &str = "trellis-backup";
/// The layout of backups this build writes and reads.
pub const FORMAT: u32 = 1;

#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Copy the database at DATABASE_URL while servers run.
    ///
    /// From SQLite the backup is a SQLite file, from Postgres an archive (gzipped JSON lines).
    /// Secrets stay sealed in it: keep the master key apart from backups.
    Create {
        /// The file to write [default: trellis-backup-<UTC time>.sqlite or .jsonl.gz here]
        #[arg(long, value_name = "FILE")]
        to: Option<PathBuf>,
    },
    /// Check that FILE is a whole Trellis backup this build can read, and say what it holds.
    Verify { file: PathBuf },
}

/// Who made a backup, when, and what it must hold.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub magic: String,
    pub format: u32,
    /// `sqlite` or `postgres`: the database the backup was taken from.
    pub backend: String,
    /// The highest migration applied to the database when it was copied.
    pub schema_version: i64,
    pub created_at: DateTime<Utc>,
    pub tables: Vec<TableDigest>,
}

/// One table's rows as the backup holds them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TableDigest {
    pub name: String,
    pub rows: u64,
    /// Hex SHA-256 of the table's rows, each as its backend writes it (see each module).
    pub sha256: String,
}

impl Manifest {
    fn new(backend: &str, schema_version: i64, created_at: DateTime<Utc>, tables: Vec<TableDigest>) -> Manifest {
        Manifest { magic: MAGIC.into(), format: FORMAT, backend: backend.into(), schema_version, created_at, tables }
    }

    /// Refuses a manifest this build cannot read.
    fn check_known(&self, file: &Path) -> Result<()> {
        if self.magic != MAGIC {
            bail!("{} is not a Trellis backup (its manifest names `{}`)", file.display(), self.magic);
        }
        if self.format > FORMAT {
            bail!("{} was made by a newer Trellis (backup format {}, this build reads up to {FORMAT}): verify or restore it with that release or a later one", file.display(), self.format);
        }
        Ok(())
    }
}

/// The tables' digests as recomputed from a file must be those its manifest promised.
fn check_tables(file: &Path, promised: &[TableDigest], found: &[TableDigest]) -> Result<()> {
    for want in promised {
        match found.iter().find(|t| t.name == want.name) {
            None => bail!("{} is incomplete: table `{}` is missing", file.display(), want.name),
            Some(got) if got.rows != want.rows => bail!(
                "{} has been altered or damaged: table `{}` holds {} rows, its manifest says {}",
                file.display(),
                want.name,
                got.rows,
                want.rows
            ),
            Some(got) if got.sha256 != want.sha256 => bail!(
                "{} has been altered or damaged: the rows of table `{}` do not match their digest",
                file.display(),
                want.name
            ),
            Some(_) => {}
        }
    }
    if let Some(extra) = found.iter().find(|t| !promised.iter().any(|p| p.name == t.name)) {
        bail!("{} has been altered: table `{}` is not in its manifest", file.display(), extra.name);
    }
    Ok(())
}

pub async fn run(db: &DatabaseConfig, command: BackupCommand, output: Output) -> Result<()> {
    match command {
        BackupCommand::Create { to } => {
            let (file, manifest) = create(db, to).await?;
            print_summary("backup written", &file, &manifest, output)
        }
        BackupCommand::Verify { file } => {
            let manifest = verify(&file).await?;
            print_summary("whole Trellis backup", &file, &manifest, output)
        }
    }
}

/// Copies the database at `db` into `to` (or the default name), checked; returns the file.
pub async fn create(db: &DatabaseConfig, to: Option<PathBuf>) -> Result<(PathBuf, Manifest)> {
    let url = db.database_url.as_str();
    let postgres = crate::store::is_postgres_url(url);
    if !postgres && !url.starts_with("sqlite:") {
        bail!("DATABASE_URL must start with sqlite:// or postgres://, got `{}`", crate::store::redact_url(url));
    }
    let extension = if postgres { archive::EXTENSION } else { sqlite::EXTENSION };
    let target = to.unwrap_or_else(|| files::default_name(Utc::now(), extension));
    let staged = files::Staged::new(&target)?;
    let written =
        if postgres { archive::create(db, staged.path()).await? } else { sqlite::create(url, staged.path()).await? };
    let checked = inspect(staged.path()).await.context("the backup just written failed its check; nothing was kept")?;
    if checked != written {
        bail!("the backup just written does not read back as written; nothing was kept");
    }
    staged.commit()?;
    Ok((target, written))
}

/// Reads `file` whole and returns its manifest if it is a Trellis backup this build can restore.
pub async fn verify(file: &Path) -> Result<Manifest> {
    let manifest = inspect(file).await?;
    let known = crate::store::newest_migration(&manifest.backend);
    if manifest.schema_version > known {
        bail!(
            "{} was made by a newer Trellis (schema version {}, this build knows up to {known}): restore it with that release or a later one",
            file.display(), manifest.schema_version
        );
    }
    Ok(manifest)
}

/// Recognizes the kind of backup by its first bytes and checks it whole.
async fn inspect(file: &Path) -> Result<Manifest> {
    let mut start = [0u8; 16];
    let read = std::fs::File::open(file)
        .and_then(|mut f| f.read(&mut start))
        .with_context(|| format!("cannot read {}", file.display()))?;
    let manifest = if start[..read] == *sqlite::HEADER {
        sqlite::inspect(file).await?
    } else if start[..read].starts_with(archive::GZIP_MAGIC) {
        archive::inspect(file)?
    } else {
        bail!("{} is not a Trellis backup: it is neither a SQLite database nor a Trellis archive", file.display());
    };
    manifest.check_known(file)?;
    Ok(manifest)
}

fn print_summary(what: &str, file: &Path, manifest: &Manifest, output: Output) -> Result<()> {
    let bytes = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    if output != Output::Table {
        let mut summary = serde_json::to_value(manifest)?;
        summary["file"] = file.display().to_string().into();
        summary["bytes"] = bytes.into();
        match output {
            Output::Json => println!("{}", serde_json::to_string_pretty(&summary)?),
            _ => println!("{summary}"),
        }
        return Ok(());
    }
    println!("{what}: {} ({})", file.display(), human_size(bytes));
    println!(
        "made from {} at {}, schema version {}",
        manifest.backend,
        manifest.created_at.to_rfc3339(),
        manifest.schema_version
    );
    let width = manifest.tables.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for table in &manifest.tables {
        println!("  {:width$}  {}", table.name, table.rows);
    }
    Ok(())
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut size = bytes as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{size:.1} {}", UNITS[unit])
    }
}
