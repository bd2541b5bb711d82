//! The format and lint gate, run first by `cargo xtask test` (and so by CI) and alone by
//! `cargo xtask lint`: rustfmt must have nothing to change and clippy nothing to say.

use crate::spa;
use crate::util::{cargo, output, run};
use anyhow::{bail, Result};
use std::path::Path;
use std::process::Command;

pub fn check(root: &Path) -> Result<()> {
    ensure_component(root, "rustfmt", "fmt")?;
    ensure_component(root, "clippy", "clippy")?;
    let formatted = run(cargo().current_dir(root).args(["fmt", "--all", "--check"]));
    if formatted.is_err() {
        bail!("some files are not formatted; run `cargo fmt --all` and commit the result");
    }
    run(cargo().current_dir(root).args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    // Natively the SPA compiles only its pure modules; its components are linted for the browser.
    spa::ensure_wasm_target(root)?;
    run(cargo().current_dir(root).args([
        "clippy",
        "-p",
        "trellis-web",
        "--target",
        spa::TARGET,
        "--",
        "-D",
        "warnings",
    ]))
}

/// Makes sure `cargo <subcommand>` exists, adding the rustup component that provides it if not.
fn ensure_component(root: &Path, component: &str, subcommand: &str) -> Result<()> {
    if output(cargo().current_dir(root).args([subcommand, "--version"])).is_some() {
        return Ok(());
    }
    if run(Command::new("rustup").current_dir(root).args(["component", "add", component])).is_err() {
        bail!("`cargo {subcommand}` is missing and rustup could not add it; install your toolchain's {component}");
    }
    Ok(())
}
