//! Puts the built web app inside the binary when `TRELLIS_EMBED_WEB_DIR` names it
//! (`cargo xtask dist`, `cargo xtask test`). Without it the table is empty: a plain `cargo
//! build` works with no web app built, and the server says how to get one.

use std::fmt::Write;
use std::path::{Path, PathBuf};

const ENV: &str = "TRELLIS_EMBED_WEB_DIR";

fn main() {
    println!("cargo:rerun-if-env-changed={ENV}");
    let mut code =
        String::from("/// The embedded web app: (path under the root, contents), `.br`/`.gz` forms included.\n");
    code.push_str("pub static FILES: &[(&str, &[u8])] = &[\n");
    if let Some(dir) = std::env::var_os(ENV).filter(|d| !d.is_empty()) {
        let dir = std::path::absolute(PathBuf::from(dir)).expect("the current directory");
        if !dir.join("index.html").is_file() {
            panic!("{ENV}={} has no index.html: build the web app first (`cargo xtask spa`)", dir.display());
        }
        // A folder: cargo reruns this when anything under it changes.
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files = Vec::new();
        collect(&dir, &dir, &mut files);
        files.sort();
        for (name, path) in files {
            writeln!(code, "    ({name:?}, include_bytes!({path:?})),").expect("writing to a String");
        }
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("web_files.rs");
    std::fs::write(out, code).expect("writing the embedded file table");
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(root, &path, files);
            continue;
        }
        let relative = path.strip_prefix(root).expect("under the root").to_str().map(|p| p.replace('\\', "/"));
        let absolute = path.to_str().map(str::to_owned);
        match (relative, absolute) {
            (Some(relative), Some(absolute)) => files.push((relative, absolute)),
            _ => panic!("{} is not a UTF-8 path", path.display()),
        }
    }
}
