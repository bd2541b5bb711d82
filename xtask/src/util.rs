//! Small process helpers shared by the xtask commands.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root: xtask lives one level below it.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask has a parent").to_path_buf()
}

/// Runs `cmd`, echoing it first, and fails with its exit status if it fails.
pub fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: $ {}", describe(cmd));
    let status = cmd.status().with_context(|| format!("could not start `{}`", describe(cmd)))?;
    if !status.success() {
        bail!("`{}` failed with {status}", describe(cmd));
    }
    Ok(())
}

/// Runs `cmd` quietly and returns its standard output, or `None` if it could not run or failed.
pub fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn describe(cmd: &Command) -> String {
    let mut parts = vec![cmd.get_program().to_string_lossy().into_owned()];
    parts.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    parts.join(" ")
}

/// The `cargo` that invoked us, so toolchain overrides carry through.
pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
}
