//! What a browser downloads on a cold load of the web app: the page and every file it names
//! (styles, icon, scripts, the wasm module), as sent with `Accept-Encoding: br` beside the same
//! files as they are (the baseline). Bytes of bodies, headers aside.

use crate::scenarios::Figures;
use anyhow::{bail, Context, Result};

/// Fetches `/` and what it references from the server at `base`, once per encoding.
pub async fn cold_load(base: &str, out: &mut Figures) -> Result<()> {
    // No automatic decompression: the body is what crossed the wire.
    let http = trellis::http_client::builder().build()?;
    let page = http.get(format!("{base}/")).send().await?.error_for_status()?.text().await?;
    if !page.contains("<html") {
        bail!("the server at {base} answered / without the web app; build it (cargo xtask spa)");
    }
    let files: Vec<&str> = std::iter::once("/").chain(references(&page)).collect();
    for (encoding, label) in [("br", "br"), ("identity", "uncompressed")] {
        let mut total = 0usize;
        for file in &files {
            let response = http.get(format!("{base}{file}")).header("accept-encoding", encoding).send().await?;
            let response = response.error_for_status().with_context(|| format!("GET {file}"))?;
            let sent =
                response.headers().get("content-encoding").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
            let body = response.bytes().await?.len();
            if file.ends_with(".wasm") {
                if encoding == "br" && sent != "br" {
                    bail!("{file} went out without brotli (content-encoding `{sent}`)");
                }
                out.insert(format!("web_wasm_{label}_bytes"), body as f64);
            }
            total += body;
        }
        out.insert(format!("web_cold_load_{label}_bytes"), total as f64);
    }
    Ok(())
}

/// The absolute paths in the page's `src="…"` and `href="…"` attributes.
fn references(page: &str) -> impl Iterator<Item = &str> {
    page.split(['"', '\'']).filter(|part| part.starts_with('/') && !part.starts_with("//") && part.contains('.'))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_names_its_files_with_absolute_paths() {
        let page = r#"<link href="/style-1.css"><script src="/boot-2.js"></script><a href="//x.org/a.js">"#;
        assert_eq!(super::references(page).collect::<Vec<_>>(), ["/style-1.css", "/boot-2.js"]);
    }
}
