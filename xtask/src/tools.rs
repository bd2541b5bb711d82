//! Finding and checking the external tools the SPA and browser tests need.

use std::path::{Path, PathBuf};

/// The first executable called `name` on `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|candidate| is_executable(candidate))
}

/// Where `cargo install` puts binaries, which is not always on `PATH` (e.g. in CI containers).
pub fn cargo_bin_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        return Some(PathBuf::from(home).join("bin"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo").join("bin"))
}

pub fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// True when running as root, where installing system packages is ours to do.
pub fn is_root() -> bool {
    crate::util::output(std::process::Command::new("id").arg("-u")).is_some_and(|uid| uid.trim() == "0")
}

/// The version Cargo.lock pins for package `name` (the first entry, if several).
pub fn locked_version(lock: &str, name: &str) -> Option<String> {
    let wanted = format!("name = \"{name}\"");
    let mut lines = lock.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == wanted {
            let version = lines.next()?.strip_prefix("version = \"")?.strip_suffix('"')?;
            return Some(version.to_owned());
        }
    }
    None
}

/// The version in `wasm-bindgen --version` output ("wasm-bindgen 0.2.100" or with a git hash after).
pub fn reported_version(output: &str) -> Option<&str> {
    output.split_whitespace().nth(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = r#"
[[package]]
name = "wasm-bindgen-macro"
version = "0.2.130"

[[package]]
name = "wasm-bindgen"
version = "0.2.130"
source = "registry+https://github.com/rust-lang/crates.io-index"
"#;

    #[test]
    fn the_pin_is_read_from_the_exact_package_entry() {
        assert_eq!(locked_version(LOCK, "wasm-bindgen").as_deref(), Some("0.2.130"));
        assert_eq!(locked_version(LOCK, "leptos"), None);
    }

    #[test]
    fn the_cli_version_is_the_second_word() {
        assert_eq!(reported_version("wasm-bindgen 0.2.130\n"), Some("0.2.130"));
        assert_eq!(reported_version("wasm-bindgen 0.2.99 (abc123)"), Some("0.2.99"));
        assert_eq!(reported_version(""), None);
    }
}
