//! `cargo xtask run | test | bench | dist`: the only entry points a newcomer needs.

mod bundle;
mod e2e;
mod lint;
mod pgbouncer;
mod postgres;
mod spa;
mod tools;
mod util;
mod wasm_opt;

use anyhow::{bail, Result};

fn main() {
    if let Err(e) = run() {
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = util::project_root();
    match args.first().map(String::as_str) {
        Some("run") => commands::run(&root, &args[1..]),
        Some("test") => commands::test(&root, &args[1..]),
        Some("bench") => commands::bench(&root, &args[1..]),
        Some("lint") => lint::check(&root),
        Some("dist") => commands::dist(&root).map(|_| ()),
        Some("spa") => {
            let optimise = if args.iter().any(|a| a == "--optimise") { spa::Optimise::Yes } else { spa::Optimise::No };
            spa::build(&root, optimise).map(|dir| eprintln!("xtask: the SPA is in {}", dir.display()))
        }
        _ => bail!("usage: cargo xtask run [serve flags] | test | lint | bench [--quick] [--no-write-benchmarks] | dist | spa [--optimise]"),
    }
}

mod commands;
