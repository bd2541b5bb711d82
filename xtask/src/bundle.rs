//! Turns wasm-bindgen's output and `static/` into the files the server sends.
//!
//! Every file but `index.html` is named by its content (`name-<16 hex digits>.ext`), so the
//! server may let browsers keep it for a year: a new build is new names, and the page that
//! names them (`index.html`, revalidated on every load) is the only file that changes in
//! place. The references between the files are rewritten to the new names; beside each file
//! that compresses well go its brotli (`.br`) and gzip (`.gz`) forms, made once here rather
//! than on every request.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::Path;

/// Relative path (with `/`) to contents.
pub type Files = BTreeMap<String, Vec<u8>>;

/// wasm-bindgen's module and its JavaScript glue, as `--out-name trellis_web` writes them.
const WASM: &str = "trellis_web_bg.wasm";
const GLUE: &str = "trellis_web.js";
/// Kinds worth compressing; images like PNG are compressed already.
const COMPRESSIBLE: [&str; 7] = ["html", "js", "css", "svg", "wasm", "json", "txt"];
/// A compressed form is kept only when it saves at least a tenth.
const WORTH_KEEPING: f64 = 0.9;

/// The served files: `pkg` holds wasm-bindgen's output, `static_dir` the page and its assets.
pub fn assemble(pkg: &Path, static_dir: &Path) -> Result<Files> {
    let mut files = Files::new();
    // Absolute paths as the page and scripts write them, to their content-named forms.
    let mut renames: Vec<(String, String)> = Vec::new();

    let wasm = read(&pkg.join(WASM))?;
    let wasm_name = content_name(WASM, &wasm);
    let glue = String::from_utf8(read(&pkg.join(GLUE))?).context("the wasm-bindgen glue is not UTF-8")?;
    // The glue finds the module next to itself: `new URL('trellis_web_bg.wasm', import.meta.url)`.
    let glue = replace_exactly_once(&glue, &format!("'{WASM}'"), &format!("'{wasm_name}'"), GLUE)?;
    let glue_name = content_name(GLUE, glue.as_bytes());
    renames.push((format!("/pkg/{WASM}"), format!("/pkg/{wasm_name}")));
    renames.push((format!("/pkg/{GLUE}"), format!("/pkg/{glue_name}")));
    files.insert(format!("pkg/{wasm_name}"), wasm);
    files.insert(format!("pkg/{glue_name}"), glue.into_bytes());

    let (scripts, others): (Vec<_>, Vec<_>) = static_files(static_dir)?
        .into_iter()
        .filter(|(name, _)| name != "index.html")
        .partition(|(n, _)| n.ends_with(".js"));
    // Leaves first (styles, icons), then the scripts that may name them, then the page.
    for (name, bytes) in others {
        add_named(&mut files, &mut renames, &name, bytes);
    }
    for (name, bytes) in scripts {
        let text = String::from_utf8(bytes).with_context(|| format!("static/{name} is not UTF-8"))?;
        let text = rewrite(&text, &renames);
        add_named(&mut files, &mut renames, &name, text.into_bytes());
    }
    let page = String::from_utf8(read(&static_dir.join("index.html"))?).context("static/index.html is not UTF-8")?;
    let page = rewrite(&page, &renames);
    files.insert("index.html".into(), page.into_bytes());
    Ok(files)
}

fn add_named(files: &mut Files, renames: &mut Vec<(String, String)>, name: &str, bytes: Vec<u8>) {
    let named = content_name(name, &bytes);
    renames.push((format!("/{name}"), format!("/{named}")));
    files.insert(named, bytes);
}

/// `dir/name.ext` → `dir/name-<first 8 bytes of SHA-256 in hex>.ext`.
pub fn content_name(path: &str, bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let file_start = path.rfind('/').map_or(0, |i| i + 1);
    match path[file_start..].rfind('.') {
        Some(dot) => {
            let (stem, ext) = path.split_at(file_start + dot);
            format!("{stem}-{hash}{ext}")
        }
        None => format!("{path}-{hash}"),
    }
}

/// Replaces each quoted absolute path (`"/style.css"` or `'/style.css'`) with its new name.
fn rewrite(text: &str, renames: &[(String, String)]) -> String {
    let mut text = text.to_owned();
    for (old, new) in renames {
        for quote in ['"', '\''] {
            text = text.replace(&format!("{quote}{old}{quote}"), &format!("{quote}{new}{quote}"));
        }
    }
    text
}

fn replace_exactly_once(text: &str, old: &str, new: &str, what: &str) -> Result<String> {
    match text.matches(old).count() {
        1 => Ok(text.replacen(old, new, 1)),
        n => bail!("expected one {old} in {what}, found {n}: has wasm-bindgen's output changed shape?"),
    }
}

/// Adds `NAME.br` and `NAME.gz` beside each compressible file they make smaller. Each
/// compression runs on its own thread: the wasm module's brotli pass dominates.
pub fn compress(files: &mut Files) -> Result<()> {
    let compressible: Vec<(&String, &Vec<u8>)> = files.iter().filter(|(name, _)| is_compressible(name)).collect();
    let made: Vec<(String, Result<Vec<u8>>)> = std::thread::scope(|scope| {
        let jobs: Vec<_> = compressible
            .iter()
            .flat_map(|(name, bytes)| {
                [
                    scope.spawn(move || (format!("{name}.br"), brotli(bytes))),
                    scope.spawn(move || (format!("{name}.gz"), gzip(bytes))),
                ]
            })
            .collect();
        jobs.into_iter().map(|job| job.join().expect("a compression thread panicked")).collect()
    });
    for (name, compressed) in made {
        let compressed = compressed?;
        let original = &files[name.rsplit_once('.').map_or(name.as_str(), |(base, _)| base)];
        if (compressed.len() as f64) < original.len() as f64 * WORTH_KEEPING {
            files.insert(name, compressed);
        }
    }
    Ok(())
}

fn is_compressible(name: &str) -> bool {
    name.rsplit_once('.').is_some_and(|(_, ext)| COMPRESSIBLE.contains(&ext))
}

fn brotli(bytes: &[u8]) -> Result<Vec<u8>> {
    // Quality 11 with the largest window: slowest to make, smallest to send, and made once.
    let mut out = Vec::new();
    {
        let mut writer = brotli::CompressorWriter::new(&mut out, 64 * 1024, 11, 24);
        writer.write_all(bytes)?;
        writer.flush()?;
    }
    Ok(out)
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes)?;
    Ok(encoder.finish()?)
}

/// Makes `dir` hold exactly `files`. A file whose contents did not change is not rewritten,
/// so its modification time stays and a build that embeds `dir` is not redone for nothing.
pub fn write_dir(dir: &Path, files: &Files) -> Result<()> {
    for (name, bytes) in files {
        let path = dir.join(name);
        if fs::read(&path).is_ok_and(|old| old == *bytes) {
            continue;
        }
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).with_context(|| format!("could not create {}", parent.display()))?;
        }
        fs::write(&path, bytes).with_context(|| format!("could not write {}", path.display()))?;
    }
    remove_others(dir, dir, files)
}

fn remove_others(root: &Path, dir: &Path, keep: &Files) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("could not read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            remove_others(root, &path, keep)?;
            if fs::read_dir(&path)?.next().is_none() {
                fs::remove_dir(&path)?;
            }
            continue;
        }
        let relative = path.strip_prefix(root)?.to_string_lossy().replace('\\', "/");
        if !keep.contains_key(&relative) {
            fs::remove_file(&path).with_context(|| format!("could not remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// The files directly in `dir` (static/ is flat), by name.
fn static_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("could not read {}", dir.display()))? {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            bail!("{} is a folder: static/ holds files only", entry.path().display());
        }
        let name = entry.file_name().into_string().map_err(|n| anyhow::anyhow!("{n:?} is not a UTF-8 file name"))?;
        found.push((name, read(&entry.path())?));
    }
    found.sort();
    Ok(found)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).with_context(|| format!("could not read {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_names_keep_the_folder_and_the_extension() {
        let named = content_name("pkg/trellis_web_bg.wasm", b"module");
        assert!(named.starts_with("pkg/trellis_web_bg-") && named.ends_with(".wasm"), "{named}");
        assert_eq!(named.len(), "pkg/trellis_web_bg-.wasm".len() + 16);
        assert_ne!(named, content_name("pkg/trellis_web_bg.wasm", b"another module"));
        assert!(content_name("favicon", b"x").starts_with("favicon-"));
    }

    #[test]
    fn only_quoted_absolute_paths_are_rewritten() {
        let renames = vec![("/boot.js".to_owned(), "/boot-00.js".to_owned())];
        let page = r#"<script src="/boot.js"></script> see /boot.js; import '/boot.js'"#;
        assert_eq!(
            rewrite(page, &renames),
            r#"<script src="/boot-00.js"></script> see /boot.js; import '/boot-00.js'"#
        );
    }

    #[test]
    fn the_page_names_every_file_by_its_content() {
        let dir = std::env::temp_dir().join(format!("xtask-bundle-{}", std::process::id()));
        let (pkg, web) = (dir.join("pkg"), dir.join("static"));
        fs::create_dir_all(&pkg).unwrap();
        fs::create_dir_all(&web).unwrap();
        fs::write(pkg.join(WASM), b"\0asm").unwrap();
        fs::write(pkg.join(GLUE), "const u = new URL('trellis_web_bg.wasm', import.meta.url);").unwrap();
        fs::write(web.join("boot.js"), "import init from '/pkg/trellis_web.js'; init();").unwrap();
        fs::write(web.join("style.css"), "body{}").unwrap();
        fs::write(web.join("index.html"), r#"<link href="/style.css"><script src="/boot.js"></script>"#).unwrap();
        let files = assemble(&pkg, &web).unwrap();
        let page = String::from_utf8(files["index.html"].clone()).unwrap();
        let boot = files.keys().find(|n| n.starts_with("boot-")).unwrap();
        let glue = files.keys().find(|n| n.starts_with("pkg/trellis_web-")).unwrap();
        let wasm = files.keys().find(|n| n.starts_with("pkg/trellis_web_bg-")).unwrap();
        assert!(page.contains(&format!("\"/{boot}\"")) && !page.contains("\"/style.css\""), "{page}");
        assert!(String::from_utf8_lossy(&files[boot]).contains(&format!("'/{glue}'")));
        assert!(String::from_utf8_lossy(&files[glue]).contains(&format!("'{}'", &wasm["pkg/".len()..])));
        fs::remove_dir_all(dir).unwrap();
    }
}
