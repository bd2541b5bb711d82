//! Where a backup is written. It is made under a temporary name beside its final one
//! (`.<name>.partial-<pid>`), checked, made durable (the file, then its folder) and only then
//! renamed: a rename within one folder is atomic, so a kill at any moment leaves either no file or
//! a whole one under the final name, and a previous backup of that name stays whole until the
//! new one replaces it. A backup that fails its checks, or errs, removes its temporary file; one
//! killed cannot, so the next backup into that folder removes the temporary files of writers no
//! longer running, whatever their name (default names carry the time, so no later backup has
//! the same one; process ids are read in `/proc`, so on Linux only).
//!
//! The temporary file is made empty and private (0600 on Unix) before anything is written to
//! it: a backup holds password hashes and sealed secrets, so only its owner reads it.

use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use std::fs::File;
use std::path::{Path, PathBuf};

/// A backup being written: its temporary path, and the name it takes once it is whole.
pub struct Staged {
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl Staged {
    pub fn new(target: &Path) -> Result<Staged> {
        let Some(name) = target.file_name().and_then(|n| n.to_str()) else {
            bail!("`{}` names no file: give --to a file name, e.g. trellis.backup", target.display());
        };
        let folder = folder_of(target);
        if !folder.is_dir() {
            bail!("cannot write the backup to {}: the folder {} does not exist", target.display(), folder.display());
        }
        remove_abandoned(&folder);
        let prefix = format!(".{name}{PARTIAL}");
        let temp = folder.join(format!("{prefix}{}", std::process::id()));
        let _ = std::fs::remove_file(&temp);
        private_new_file(&temp).with_context(|| format!("cannot create {}", temp.display()))?;
        Ok(Staged { temp, target: target.to_owned(), committed: false })
    }

    /// The temporary file the backup is written to.
    pub fn path(&self) -> &Path {
        &self.temp
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Makes the checked file durable and gives it its final name.
    pub fn commit(mut self) -> Result<()> {
        File::open(&self.temp)
            .and_then(|file| file.sync_all())
            .with_context(|| format!("cannot flush the backup {} to disk", self.temp.display()))?;
        std::fs::rename(&self.temp, &self.target)
            .with_context(|| format!("cannot rename {} to {}", self.temp.display(), self.target.display()))?;
        self.committed = true;
        // The rename itself is durable once the folder is; some file systems cannot sync a folder.
        if let Ok(folder) = File::open(folder_of(&self.target)) {
            let _ = folder.sync_all();
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// What a temporary name carries between the final name and the writer's process id.
const PARTIAL: &str = ".partial-";

/// Removes the temporary files (`.<name>.partial-<pid>`, and SQLite's `-journal` beside them)
/// of writers whose process has ended.
fn remove_abandoned(folder: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    if !Path::new("/proc/self").exists() {
        return;
    }
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str().filter(|n| n.starts_with('.')) else { continue };
        let Some((_, rest)) = name.rsplit_once(PARTIAL) else { continue };
        let pid = rest.trim_end_matches("-journal");
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// `trellis-backup-<UTC time>.<extension>` in the current folder: sorts by time, and says what it is.
pub fn default_name(at: DateTime<Utc>, extension: &str) -> PathBuf {
    PathBuf::from(format!("trellis-backup-{}.{extension}", at.format("%Y%m%dT%H%M%SZ")))
}

/// An empty file only its owner may read and write (`VACUUM INTO` accepts an empty file).
fn private_new_file(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}
