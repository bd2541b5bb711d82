//! Builds the single-page app into `dist/`: the wasm32 build of trellis-web and
//! wasm-bindgen's JavaScript glue under `dist/pkg/`, the files of `static/` beside them, all
//! but `index.html` named by their content and precompressed (see `bundle`).

use crate::util::{cargo, describe, output, run};
use crate::{bundle, tools, wasm_opt};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const TARGET: &str = "wasm32-unknown-unknown";
const PROFILE: &str = "wasm-release";
/// The module name static/boot.js imports (`/pkg/trellis_web.js`, renamed by `bundle`).
const OUT_NAME: &str = "trellis_web";

/// Whether the module goes through `wasm-opt -Oz` (for what users download).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimise {
    Yes,
    No,
}

/// Builds the SPA and returns the directory to serve (`TRELLIS_WEB_DIR`) or embed.
pub fn build(root: &Path, optimise: Optimise) -> Result<PathBuf> {
    ensure_wasm_target(root)?;
    let wasm_bindgen = ensure_wasm_bindgen(root)?;

    run(cargo().current_dir(root).args(["build", "-p", "trellis-web", "--target", TARGET, "--profile", PROFILE]))?;
    let wasm = target_dir(root).join(TARGET).join(PROFILE).join("trellis-web.wasm");
    if !wasm.is_file() {
        bail!("the wasm build succeeded but {} is missing", wasm.display());
    }

    // wasm-bindgen writes fixed names into a scratch folder; `bundle` names them by content.
    let pkg = target_dir(root).join("spa-pkg");
    if pkg.exists() {
        fs::remove_dir_all(&pkg).with_context(|| format!("could not clear {}", pkg.display()))?;
    }
    fs::create_dir_all(&pkg).with_context(|| format!("could not create {}", pkg.display()))?;
    run(Command::new(&wasm_bindgen)
        .args(["--target", "web", "--no-typescript", "--out-name", OUT_NAME, "--out-dir"])
        .arg(&pkg)
        .arg(&wasm))?;
    if optimise == Optimise::Yes {
        wasm_opt::optimise(root, &pkg.join(format!("{OUT_NAME}_bg.wasm")))?;
    }

    let mut files = bundle::assemble(&pkg, &root.join("static"))?;
    bundle::compress(&mut files)?;
    let dist = root.join("dist");
    bundle::write_dir(&dist, &files)?;
    eprintln!("xtask: SPA built into {}", dist.display());
    Ok(dist)
}

pub fn ensure_wasm_target(root: &Path) -> Result<()> {
    let installed = output(Command::new("rustup").current_dir(root).args(["target", "list", "--installed"]));
    match installed {
        Some(list) if list.lines().any(|t| t.trim() == TARGET) => Ok(()),
        Some(_) => run(Command::new("rustup").current_dir(root).args(["target", "add", TARGET])),
        // Without rustup (a distro toolchain) the target's standard library has to be there already.
        None => {
            let sysroot = output(Command::new("rustc").args(["--print", "sysroot"])).unwrap_or_default();
            if Path::new(sysroot.trim()).join("lib/rustlib").join(TARGET).is_dir() {
                Ok(())
            } else {
                bail!("the {TARGET} target is not installed and rustup is not available to add it; install rustup or your distribution's wasm32 Rust standard library")
            }
        }
    }
}

/// Returns a wasm-bindgen CLI whose version equals the `wasm-bindgen` crate pinned in Cargo.lock;
/// a mismatch makes the CLI reject the module, so install the pinned one when needed.
fn ensure_wasm_bindgen(root: &Path) -> Result<PathBuf> {
    let lock_path = root.join("Cargo.lock");
    let lock = fs::read_to_string(&lock_path).with_context(|| format!("could not read {}", lock_path.display()))?;
    let pinned = tools::locked_version(&lock, "wasm-bindgen").with_context(|| {
        format!("{} has no wasm-bindgen entry; is trellis-web in the workspace?", lock_path.display())
    })?;

    if let Some(cli) = wasm_bindgen_with_version(&pinned) {
        return Ok(cli);
    }

    eprintln!("xtask: installing wasm-bindgen-cli {pinned} to match Cargo.lock (a few minutes, once)");
    let install = |locked: bool| {
        let mut cmd = cargo();
        cmd.args(["install", "wasm-bindgen-cli", "--version", &pinned]);
        if locked {
            cmd.arg("--locked");
        }
        run(&mut cmd)
    };
    if let Err(err) = install(true) {
        // --locked needs every version in the CLI's own lockfile; a registry mirror may lack one.
        eprintln!("xtask: `--locked` install failed ({err:#}); retrying with freshly resolved dependencies");
        install(false)?;
    }
    wasm_bindgen_with_version(&pinned).with_context(|| {
        format!("installed wasm-bindgen-cli {pinned} but no wasm-bindgen of that version is on PATH or in ~/.cargo/bin")
    })
}

/// The wasm-bindgen on PATH or in cargo's bin directory, if it reports `version`.
fn wasm_bindgen_with_version(version: &str) -> Option<PathBuf> {
    let candidates = [tools::find_on_path("wasm-bindgen"), tools::cargo_bin_dir().map(|d| d.join("wasm-bindgen"))];
    for cli in candidates.into_iter().flatten().filter(|p| tools::is_executable(p)) {
        let mut cmd = Command::new(&cli);
        cmd.arg("--version");
        match output(&mut cmd) {
            Some(out) if tools::reported_version(&out) == Some(version) => return Some(cli),
            Some(out) => eprintln!("xtask: {} is {}, need {version}", describe(&cmd), out.trim()),
            None => {}
        }
    }
    None
}

/// Where cargo writes builds, honouring CARGO_TARGET_DIR like cargo does (relative to the workspace).
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}
