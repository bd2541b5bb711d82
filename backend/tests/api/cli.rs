//! The command line: migrations and user management against a real database.

use crate::common::{fresh_database, Backend};
use crate::process::Process;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

fn trellis(database_url: &str, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trellis"))
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_added_and_changed_on_the_command_line_can_sign_in() {
    let (url, _dir) = fresh_database(Backend::Sqlite).await;
    assert!(trellis(&url, &["migrate"], "").status.success());
    let added = trellis(&url, &["user", "add", "grace", "--role", "editor"], "first-password\n");
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let again = trellis(&url, &["user", "add", "grace"], "another-password\n");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let short = trellis(&url, &["user", "add", "ada"], "short\n");
    assert!(!short.status.success(), "weak passwords are refused");
    let changed = trellis(&url, &["user", "passwd", "grace"], "second-password\n");
    assert!(changed.status.success());
    let unknown = trellis(&url, &["user", "passwd", "nobody"], "second-password\n");
    assert!(!unknown.status.success());

    let server = Process::start(&url, &[]).await;
    let http = trellis::http_client::builder().build().unwrap();
    let login = |password: &'static str| {
        http.post(format!("{}/api/v1/auth/login", server.base))
            .json(&json!({"username": "grace", "password": password}))
            .send()
    };
    assert_eq!(login("first-password").await.unwrap().status(), 401);
    let ok = login("second-password").await.unwrap();
    assert_eq!(ok.status(), 200);
    let token = ok.json::<Value>().await.unwrap()["access_token"].as_str().unwrap().to_owned();
    let me: Value = http
        .get(format!("{}/api/v1/auth/me", server.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["role"], "editor");
}

#[test]
fn a_bad_database_url_is_a_clear_error() {
    let out = trellis("mysql://somewhere/db", &["migrate"], "");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("DATABASE_URL must start with sqlite:// or postgres://"));
}
