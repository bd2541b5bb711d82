//! The two commands of the README.

use crate::util::{cargo, run as run_cmd};
use crate::{e2e, lint, postgres, spa};
use anyhow::Result;
use std::path::Path;
use std::process::Command;

/// `cargo xtask run [serve flags]`: build the SPA and the server (release), then run
/// Trellis on its embedded SQLite default until Ctrl+C.
pub fn run(root: &Path, serve_args: &[String]) -> Result<()> {
    let web_dir = spa::build(root)?;
    run_cmd(cargo().current_dir(root).args(["build", "--release", "-p", "trellis"]))?;
    let server = spa::target_dir(root).join("release/trellis");
    eprintln!("xtask: starting Trellis (data in {}/data, Ctrl+C to stop)", root.display());
    let mut serve = Command::new(server);
    serve.current_dir(root).arg("serve").args(serve_args).env("TRELLIS_WEB_DIR", &web_dir);
    run_cmd(&mut serve)
}

/// `cargo xtask test`: the format and lint gate, then every test: Rust on SQLite and Postgres,
/// then the browser tests.
pub fn test(root: &Path, _args: &[String]) -> Result<()> {
    lint::check(root)?;
    let database_url = postgres::ensure()?;
    postgres::drop_test_databases(&database_url);
    let web_dir = spa::build(root)?;
    run_cmd(cargo().current_dir(root).args(["build", "-p", "trellis"]))?;

    let mut rust_tests = cargo();
    rust_tests.current_dir(root).env("TEST_DATABASE_URL", &database_url);
    if crate::tools::find_on_path("cargo-nextest").is_some() {
        rust_tests.args(["nextest", "run", "--workspace", "--no-fail-fast"]);
    } else {
        eprintln!("xtask: cargo-nextest not found; using cargo test (install it with `cargo install cargo-nextest`)");
        rust_tests.args(["test", "--workspace", "--no-fail-fast"]);
    }
    let rust = run_cmd(&mut rust_tests);
    let browser = e2e::run(root, &spa::target_dir(root).join("debug/trellis"), &web_dir);
    postgres::drop_test_databases(&database_url);
    rust?;
    browser
}

/// `cargo xtask bench [--quick] [--backend sqlite|postgres|both]`: release builds of the
/// server and the driver, then the benchmark against both databases.
pub fn bench(root: &Path, args: &[String]) -> Result<()> {
    let database_url = postgres::ensure()?;
    run_cmd(cargo().current_dir(root).args(["build", "--release", "-p", "trellis", "-p", "trellis-bench"]))?;
    let release = spa::target_dir(root).join("release");
    let mut driver = Command::new(release.join("trellis-bench"));
    driver
        .current_dir(root)
        .arg("--bin")
        .arg(release.join("trellis"))
        .args(args)
        .env("TEST_DATABASE_URL", &database_url);
    let result = run_cmd(&mut driver);
    postgres::drop_test_databases(&database_url);
    result
}
