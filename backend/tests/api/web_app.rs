//! The web app's files as the server sends them: content types, validators, caching per
//! kind of file, the precompressed forms by `Accept-Encoding`, and client-side routes. The app
//! here is a stand-in folder (`TRELLIS_WEB_DIR`) laid out as `cargo xtask spa` lays out
//! `dist/`; the binary's own copy goes through the same code and is driven in Chromium by
//! e2e/tests/one-binary.spec.ts. No test here touches the store, so SQLite alone.

use crate::common::{problem, Backend, TestApp};
use reqwest::header::{HeaderMap, ACCEPT_ENCODING, IF_NONE_MATCH};
use reqwest::{Response, StatusCode};

const YEAR: &str = "public, max-age=31536000, immutable";
const GLUE: &str = "/pkg/trellis_web-0123456789abcdef.js";
const WASM: &str = "/pkg/trellis_web_bg-fedcba9876543210.wasm";
const PAGE: &str = "<!doctype html><title>stand-in</title><script type=module src=/boot.js></script>";

/// A server whose web folder holds a page, a content-named script and module with their
/// compressed forms (distinct bytes, so the test sees which form went out), and an icon
/// whose name carries no hash.
async fn with_app() -> (TestApp, tempfile::TempDir) {
    let web = tempfile::tempdir().unwrap();
    let pkg = web.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    let write =
        |name: &str, bytes: &[u8]| std::fs::write(web.path().join(name.trim_start_matches('/')), bytes).unwrap();
    write("index.html", PAGE.as_bytes());
    write("index.html.br", b"brotli page");
    write("favicon.svg", b"<svg/>");
    write(GLUE, b"export default function init() {}");
    write(&format!("{GLUE}.br"), b"brotli glue");
    write(&format!("{GLUE}.gz"), b"gzip glue");
    write(WASM, b"\0asm\x01\0\0\0");
    write(&format!("{WASM}.br"), b"brotli module");
    write(&format!("{WASM}.gz"), b"gzip module");
    let dir = web.path().to_owned();
    (TestApp::spawn_with(Backend::Sqlite, |s| s.web_dir = Some(dir)).await, web)
}

async fn get(app: &TestApp, path: &str, headers: &[(reqwest::header::HeaderName, &str)]) -> Response {
    let mut request = app.client.get(app.url(path));
    for (name, value) in headers {
        request = request.header(name, *value);
    }
    request.send().await.unwrap()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers.get(name).map_or("", |v| v.to_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_file_has_its_content_type_and_caching() {
    let (app, _web) = with_app().await;
    let cases = [
        ("/", "text/html; charset=utf-8", "no-cache"),
        ("/index.html", "text/html; charset=utf-8", "no-cache"),
        (GLUE, "text/javascript; charset=utf-8", YEAR),
        (WASM, "application/wasm", YEAR),
        ("/favicon.svg", "image/svg+xml", "no-cache"),
    ];
    for (path, content_type, cache) in cases {
        let response = get(&app, path, &[]).await;
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers();
        assert_eq!(header(headers, "content-type"), content_type, "{path}");
        assert_eq!(header(headers, "cache-control"), cache, "{path}");
        assert_eq!(header(headers, "vary"), "accept-encoding", "{path}");
        assert!(header(headers, "etag").starts_with('"'), "{path}: a strong ETag");
        assert_eq!(header(headers, "content-encoding"), "", "{path}: none asked for, none sent");
    }
    assert_eq!(get(&app, WASM, &[]).await.bytes().await.unwrap().as_ref(), b"\0asm\x01\0\0\0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_precompressed_form_goes_out_by_accept_encoding() {
    let (app, _web) = with_app().await;
    let cases: [(&str, &str, &[u8]); 7] = [
        ("gzip, deflate, br, zstd", "br", b"brotli module"),
        ("br", "br", b"brotli module"),
        ("gzip, deflate", "gzip", b"gzip module"),
        ("br;q=0, gzip", "gzip", b"gzip module"),
        ("br;q=0.5, gzip;q=0.9", "gzip", b"gzip module"),
        ("*", "br", b"brotli module"),
        ("identity, zstd", "", b"\0asm\x01\0\0\0"),
    ];
    let mut tags = std::collections::HashSet::new();
    for (accepted, sent, body) in cases {
        let response = get(&app, WASM, &[(ACCEPT_ENCODING, accepted)]).await;
        assert_eq!(response.status(), 200, "{accepted}");
        assert_eq!(header(response.headers(), "content-encoding"), sent, "{accepted}");
        assert_eq!(header(response.headers(), "content-type"), "application/wasm", "{accepted}");
        assert_eq!(header(response.headers(), "vary"), "accept-encoding");
        tags.insert(header(response.headers(), "etag").to_owned());
        assert_eq!(response.bytes().await.unwrap().as_ref(), body, "{accepted}");
    }
    assert_eq!(tags.len(), 3, "each encoding is its own representation, with its own ETag: {tags:?}");
    // The page has a brotli form only: a gzip-only client gets it as it is.
    let page = get(&app, "/", &[(ACCEPT_ENCODING, "gzip")]).await;
    assert_eq!(header(page.headers(), "content-encoding"), "");
    assert_eq!(page.text().await.unwrap(), PAGE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_current_etag_is_answered_with_304_and_no_body() {
    let (app, _web) = with_app().await;
    for (path, accepted) in [(WASM, "br"), (WASM, "gzip"), ("/", "identity"), ("/workflows/abc", "br")] {
        let first = get(&app, path, &[(ACCEPT_ENCODING, accepted)]).await;
        let etag = header(first.headers(), "etag").to_owned();
        let cache = header(first.headers(), "cache-control").to_owned();
        let again = get(&app, path, &[(ACCEPT_ENCODING, accepted), (IF_NONE_MATCH, &etag)]).await;
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path} {accepted}");
        assert_eq!(header(again.headers(), "etag"), etag);
        assert_eq!(header(again.headers(), "cache-control"), cache, "a 304 carries the caching of a 200");
        assert_eq!(header(again.headers(), "vary"), "accept-encoding");
        assert!(again.bytes().await.unwrap().is_empty());
        let weak_in_a_list = format!("\"other\", W/{etag}");
        let listed = get(&app, path, &[(ACCEPT_ENCODING, accepted), (IF_NONE_MATCH, &weak_in_a_list)]).await;
        assert_eq!(listed.status(), StatusCode::NOT_MODIFIED, "{path}: weak comparison");
    }
    // The brotli form's tag does not validate the gzip form.
    let br = get(&app, WASM, &[(ACCEPT_ENCODING, "br")]).await;
    let br_tag = header(br.headers(), "etag").to_owned();
    let gz = get(&app, WASM, &[(ACCEPT_ENCODING, "gzip"), (IF_NONE_MATCH, &br_tag)]).await;
    assert_eq!(gz.status(), 200);
    assert_eq!(gz.bytes().await.unwrap().as_ref(), b"gzip module");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_side_routes_get_the_page_and_missing_files_and_api_paths_get_404() {
    let (app, _web) = with_app().await;
    for route in ["/instances/0190c0de-0000-7000-8000-000000000000", "/workflows/abc/triggers", "/login"] {
        let response = get(&app, route, &[]).await;
        assert_eq!(response.status(), 200, "{route}");
        assert_eq!(header(response.headers(), "content-type"), "text/html; charset=utf-8", "{route}");
        assert_eq!(header(response.headers(), "cache-control"), "no-cache", "{route}");
        assert_eq!(response.text().await.unwrap(), PAGE, "{route}");
    }
    // A script from an earlier build: a 404, never the page in its place.
    problem(get(&app, "/pkg/trellis_web-aaaaaaaaaaaaaaaa.js", &[]).await, 404).await;
    // The compressed forms are not files of their own.
    problem(get(&app, &format!("{WASM}.br"), &[]).await, 404).await;
    for path in ["/api/v1/no-such-route", "/api/nothing", "/api"] {
        problem(get(&app, path, &[]).await, 404).await;
        problem(app.get(path).send().await.unwrap(), 404).await;
    }
    let post = app.client.post(app.url("/")).send().await.unwrap();
    assert_eq!(post.headers()["allow"], "GET, HEAD", "a 405 says which methods the path takes");
    problem(post, 405).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_folder_without_an_app_says_how_to_build_one() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().to_owned();
    let app = TestApp::spawn_with(Backend::Sqlite, |s| s.web_dir = Some(dir)).await;
    let response = get(&app, "/instances/abc", &[]).await;
    assert_eq!(response.status(), 503);
    assert_eq!(header(response.headers(), "cache-control"), "no-store");
    let page = response.text().await.unwrap();
    assert!(page.contains("cargo xtask spa") && page.contains("TRELLIS_WEB_DIR"), "{page}");
    problem(get(&app, "/api/v1/nope", &[]).await, 404).await;
    assert_eq!(app.get("/api/v1/workflows").send().await.unwrap().status(), 200, "the API works without an app");
}
