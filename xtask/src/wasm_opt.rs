//! `wasm-opt -Oz` (binaryen) over the web app's module, for `cargo xtask dist` and
//! `cargo xtask bench`: it halves the module. The everyday builds (`run`, `test`) skip it: what
//! they test is the same code, only larger.
//!
//! Which `wasm-opt`: one of binaryen 116 or newer on PATH, in cargo's bin directory or installed
//! here before; else binaryen's own npm package (its tools compiled to wasm, run by Node: a
//! 20-second download) into `target/binaryen/`; else, without npm, the `wasm-opt` crate's CLI,
//! which compiles binaryen's C++ from source (well over half an hour on a busy two-core machine).

use crate::tools;
use crate::util::{cargo, describe, output, run};
use anyhow::{Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `wasm-opt` crate's version (its CLI reports binaryen's, 116).
const CRATE_VERSION: &str = "0.116.1";
/// Binaryen's npm package, pinned.
const NPM_PACKAGE: &str = "binaryen@132.0.0";
const MIN_BINARYEN: u32 = 116;
/// What rustc's wasm32 target emits by default (and wasm-bindgen keeps); binaryen must be told,
/// or it refuses the module's bulk-memory and reference-type instructions.
const FEATURES: [&str; 6] = [
    "--enable-bulk-memory",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-reference-types",
    "--enable-multivalue",
    "--enable-sign-ext",
];

/// Optimises `wasm` for size, in place.
pub fn optimise(root: &Path, wasm: &Path) -> Result<()> {
    let tool = ensure(&crate::spa::target_dir(root).join("binaryen"))?;
    let optimised = wasm.with_extension("opt.wasm");
    let before = fs::metadata(wasm)?.len();
    run(Command::new(&tool).arg("-Oz").args(FEATURES).arg(wasm).arg("-o").arg(&optimised))?;
    fs::rename(&optimised, wasm).with_context(|| format!("could not replace {}", wasm.display()))?;
    let after = fs::metadata(wasm)?.len();
    eprintln!("xtask: wasm-opt -Oz: {} KiB -> {} KiB", before / 1024, after / 1024);
    Ok(())
}

/// `npm_dir` is where binaryen's npm package goes (and is looked for).
fn ensure(npm_dir: &Path) -> Result<PathBuf> {
    if let Some(tool) = usable(npm_dir) {
        return Ok(tool);
    }
    if tools::find_on_path("npm").is_some() {
        eprintln!("xtask: installing binaryen's npm package ({NPM_PACKAGE}) into {}", npm_dir.display());
        fs::create_dir_all(npm_dir)?;
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--save-exact", "--prefix"])
            .arg(npm_dir)
            .arg(NPM_PACKAGE))?;
    } else {
        eprintln!("xtask: no npm; installing the wasm-opt crate's CLI {CRATE_VERSION}, which builds binaryen from source (long, once)");
        run(cargo().args(["install", "wasm-opt", "--version", CRATE_VERSION, "--locked"]))?;
    }
    usable(npm_dir).context("installed binaryen but found no wasm-opt of version 116 or newer")
}

/// A `wasm-opt` that reports binaryen 116 or newer.
fn usable(npm_dir: &Path) -> Option<PathBuf> {
    let candidates = [
        tools::find_on_path("wasm-opt"),
        tools::cargo_bin_dir().map(|d| d.join("wasm-opt")),
        Some(npm_dir.join("node_modules/.bin/wasm-opt")),
    ];
    for tool in candidates.into_iter().flatten().filter(|p| tools::is_executable(p)) {
        let mut cmd = Command::new(&tool);
        cmd.arg("--version");
        match output(&mut cmd).as_deref().map(binaryen_version) {
            Some(Some(version)) if version >= MIN_BINARYEN => return Some(tool),
            Some(_) => eprintln!("xtask: {} is older than binaryen {MIN_BINARYEN}; not using it", describe(&cmd)),
            None => {}
        }
    }
    None
}

/// `wasm-opt version 116 (version_116)` → 116.
fn binaryen_version(out: &str) -> Option<u32> {
    let mut words = out.split_whitespace().skip_while(|w| *w != "version");
    words.nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn binaryen_reports_its_version_after_the_word_version() {
        assert_eq!(super::binaryen_version("wasm-opt version 116 (version_116)\n"), Some(116));
        assert_eq!(super::binaryen_version("wasm-opt version 108"), Some(108));
        assert_eq!(super::binaryen_version("wasm-opt"), None);
    }
}
