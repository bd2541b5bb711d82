//! The two commands of the README, the benchmark, and the binary users download.

use crate::spa::Optimise;
use crate::util::{cargo, run as run_cmd};
use crate::{e2e, lint, pgbouncer, postgres, spa};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Read by backend/build.rs: the built web app to put inside the `trellis` binary.
const EMBED_ENV: &str = "TRELLIS_EMBED_WEB_DIR";

/// `cargo xtask run [serve flags]`: build the SPA and the server (release), then run
/// Trellis on its embedded SQLite default until Ctrl+C.
/// The app is served from `dist/` rather than embedded: a change to it then needs no
/// rebuild of the server.
pub fn run(root: &Path, serve_args: &[String]) -> Result<()> {
    let web_dir = spa::build(root, Optimise::No)?;
    run_cmd(cargo().current_dir(root).args(["build", "--release", "-p", "trellis"]))?;
    let server = spa::target_dir(root).join("release/trellis");
    eprintln!("xtask: starting Trellis (data in {}/data, Ctrl+C to stop)", root.display());
    let mut serve = Command::new(server);
    serve.current_dir(root).arg("serve").args(serve_args).env("TRELLIS_WEB_DIR", &web_dir);
    run_cmd(&mut serve)
}

/// `cargo xtask test`: the format and lint gate, then every test: Rust on SQLite and Postgres,
/// then the browser tests. The SPA is built once and embedded in the server the browser tests
/// start (from a temporary directory, as a user would).
pub fn test(root: &Path, _args: &[String]) -> Result<()> {
    lint::check(root)?;
    let database_url = postgres::ensure()?;
    let pgbouncer = pgbouncer::ensure()?;
    postgres::drop_test_databases(&database_url);
    let web_dir = spa::build(root, Optimise::No)?;
    // The Rust tests build with the same setting, so cargo builds the server once.
    run_cmd(cargo().current_dir(root).args(["build", "-p", "trellis"]).env(EMBED_ENV, &web_dir))?;

    let mut rust_tests = cargo();
    rust_tests
        .current_dir(root)
        .env("TEST_DATABASE_URL", &database_url)
        .env(EMBED_ENV, &web_dir)
        .env(pgbouncer::ENV, &pgbouncer);
    if crate::tools::find_on_path("cargo-nextest").is_some() {
        rust_tests.args(["nextest", "run", "--workspace", "--no-fail-fast"]);
    } else {
        eprintln!("xtask: cargo-nextest not found; using cargo test (install it with `cargo install cargo-nextest`)");
        rust_tests.args(["test", "--workspace", "--no-fail-fast"]);
    }
    let rust = run_cmd(&mut rust_tests);
    let browser = e2e::run(root, &spa::target_dir(root).join("debug/trellis"));
    postgres::drop_test_databases(&database_url);
    rust?;
    browser
}

/// `cargo xtask bench [--quick] [--backend sqlite|postgres|both]`: release builds of the
/// server and the driver, then the benchmark against both databases. The servers it starts
/// serve the optimised web app from `dist/`, whose cold load it weighs.
pub fn bench(root: &Path, args: &[String]) -> Result<()> {
    let database_url = postgres::ensure()?;
    let pgbouncer = pgbouncer::ensure()?;
    let web_dir = spa::build(root, Optimise::Yes)?;
    run_cmd(cargo().current_dir(root).args(["build", "--release", "-p", "trellis", "-p", "trellis-bench"]))?;
    let release = spa::target_dir(root).join("release");
    let mut driver = Command::new(release.join("trellis-bench"));
    driver
        .current_dir(root)
        .arg("--bin")
        .arg(release.join("trellis"))
        .args(args)
        .env("TEST_DATABASE_URL", &database_url)
        .env(pgbouncer::ENV, &pgbouncer)
        .env("TRELLIS_WEB_DIR", &web_dir);
    let result = run_cmd(&mut driver);
    postgres::drop_test_databases(&database_url);
    result
}

/// `cargo xtask dist`: the binary users download, with the optimised web app inside, at
/// `target/dist/trellis` (the `dist` profile is `release` in a folder of its own, so it and
/// `cargo xtask run`'s server, which does not embed the app, do not rebuild each other).
pub fn dist(root: &Path) -> Result<PathBuf> {
    let web_dir = spa::build(root, Optimise::Yes)?;
    run_cmd(cargo().current_dir(root).args(["build", "--profile", "dist", "-p", "trellis"]).env(EMBED_ENV, &web_dir))?;
    let binary = spa::target_dir(root).join("dist/trellis");
    let size = std::fs::metadata(&binary).with_context(|| format!("{} is missing", binary.display()))?.len();
    eprintln!("xtask: {} ({} MiB): copy it anywhere and run `trellis serve`", binary.display(), size >> 20);
    Ok(binary)
}
