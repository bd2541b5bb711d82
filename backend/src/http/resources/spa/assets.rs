//! The web app's files: built into the binary (see backend/build.rs), or read from a folder
//! when `TRELLIS_WEB_DIR` names one (for development). Each file comes with the brotli and
//! gzip forms the build made beside it (`NAME.br`, `NAME.gz`), never compressed here.

use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/web_files.rs"));
}

pub const INDEX: &str = "index.html";

pub type Contents = Cow<'static, [u8]>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Identity,
    Brotli,
    Gzip,
}

impl Encoding {
    /// The `Content-Encoding` token (none for the file as it is).
    pub fn token(self) -> Option<&'static str> {
        match self {
            Encoding::Identity => None,
            Encoding::Brotli => Some("br"),
            Encoding::Gzip => Some("gzip"),
        }
    }
}

/// One file and its precompressed forms.
#[derive(Clone)]
pub struct Asset {
    pub content_type: &'static str,
    /// Named by its content (`name-<16 hex digits>.ext`, see xtask/src/bundle.rs): what is
    /// under that name never changes, so browsers may keep it for good.
    pub immutable: bool,
    /// The start of the SHA-256 of the uncompressed contents, in hex.
    digest: String,
    identity: Contents,
    brotli: Option<Contents>,
    gzip: Option<Contents>,
}

impl Asset {
    fn new(name: &str, identity: Contents, brotli: Option<Contents>, gzip: Option<Contents>) -> Asset {
        let digest = Sha256::digest(&identity)[..8].iter().map(|b| format!("{b:02x}")).collect();
        Asset { content_type: content_type(name), immutable: is_content_named(name), digest, identity, brotli, gzip }
    }

    pub fn has(&self, encoding: Encoding) -> bool {
        match encoding {
            Encoding::Identity => true,
            Encoding::Brotli => self.brotli.is_some(),
            Encoding::Gzip => self.gzip.is_some(),
        }
    }

    /// The bytes to send in `encoding` (the file as it is when that form is missing).
    pub fn contents(&self, encoding: Encoding) -> Contents {
        let form = match encoding {
            Encoding::Identity => None,
            Encoding::Brotli => self.brotli.as_ref(),
            Encoding::Gzip => self.gzip.as_ref(),
        };
        form.unwrap_or(&self.identity).clone()
    }

    /// A strong validator per representation: each encoding's bytes differ, so do their tags.
    pub fn etag(&self, encoding: Encoding) -> String {
        match encoding.token() {
            Some(token) => format!("\"{}.{token}\"", self.digest),
            None => format!("\"{}\"", self.digest),
        }
    }
}

/// Where the files come from: the folder `TRELLIS_WEB_DIR` names, or the binary.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Embedded,
    Dir(&'a Path),
}

impl<'a> Source<'a> {
    pub fn new(web_dir: Option<&'a Path>) -> Source<'a> {
        web_dir.map_or(Source::Embedded, Source::Dir)
    }

    /// Whether there is an app to serve at all.
    pub fn is_built(self) -> bool {
        match self {
            Source::Embedded => EMBEDDED.contains_key(INDEX),
            Source::Dir(dir) => dir.join(INDEX).is_file(),
        }
    }

    /// The file at `name` (a path below the root, without the leading `/`).
    pub fn get(self, name: &str) -> Option<Asset> {
        if is_compressed_form(name) {
            return None;
        }
        match self {
            Source::Embedded => EMBEDDED.get(name).cloned(),
            Source::Dir(dir) => from_dir(dir, name),
        }
    }

    /// How many files the binary carries (their compressed forms aside).
    pub fn embedded_count() -> usize {
        EMBEDDED.len()
    }
}

static EMBEDDED: LazyLock<HashMap<&'static str, Asset>> = LazyLock::new(|| {
    let all: HashMap<&'static str, &'static [u8]> = embedded::FILES.iter().copied().collect();
    let form = |name: &str, ext: &str| all.get(format!("{name}.{ext}").as_str()).map(|b| Cow::Borrowed(*b));
    all.iter()
        .filter(|(name, _)| !is_compressed_form(name))
        .map(|(&name, &bytes)| (name, Asset::new(name, Cow::Borrowed(bytes), form(name, "br"), form(name, "gz"))))
        .collect()
});

fn from_dir(dir: &Path, name: &str) -> Option<Asset> {
    // Plain segments only: nothing outside the folder is reachable.
    let safe = name.split('/').all(|s| !s.is_empty() && s != "." && s != ".." && !s.contains('\\'));
    if !safe {
        return None;
    }
    let path = dir.join(name);
    let identity = std::fs::read(&path).ok()?;
    let form = |ext: &str| std::fs::read(dir.join(format!("{name}.{ext}"))).ok().map(Cow::Owned);
    Some(Asset::new(name, Cow::Owned(identity), form("br"), form("gz")))
}

fn is_compressed_form(name: &str) -> bool {
    name.ends_with(".br") || name.ends_with(".gz")
}

/// `…/name-0123456789abcdef.ext`: the stem ends in a dash and 16 lowercase hex digits.
pub fn is_content_named(name: &str) -> bool {
    let file = name.rsplit('/').next().unwrap_or(name);
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    stem.rsplit_once('-').is_some_and(|(_, hash)| {
        hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("svg") => "image/svg+xml",
        Some("json" | "map") => "application/json",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_ending_in_a_content_hash_are_immutable() {
        assert!(is_content_named("pkg/trellis_web_bg-0123456789abcdef.wasm"));
        assert!(is_content_named("boot-fedcba9876543210.js"));
        assert!(!is_content_named("index.html"));
        assert!(!is_content_named("pkg/trellis_web.js"));
        assert!(!is_content_named("boot-0123456789ABCDEF.js"), "upper case is not what the build writes");
        assert!(!is_content_named("boot-0123456789abcde.js"), "15 digits");
        assert!(!is_content_named("x-0123456789abcdef/app.js"), "the folder's name does not count");
    }

    #[test]
    fn the_wasm_module_is_served_as_application_wasm() {
        assert_eq!(content_type("pkg/a-0123456789abcdef.wasm"), "application/wasm");
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("boot.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type("LICENSE"), "application/octet-stream");
    }

    #[test]
    fn a_folder_source_refuses_paths_that_climb_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "x").unwrap();
        let source = Source::Dir(dir.path());
        assert!(source.get("index.html").is_some());
        for name in ["../index.html", "a/../index.html", "./index.html", "", "a//b", "index.html.br"] {
            assert!(source.get(name).is_none(), "{name}");
        }
    }
}
