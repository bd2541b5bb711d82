//! Sign-in under attack: a burst of wrong passwords costs bounded memory, and repeated
//! failures lock the username (and the address) for a while, the right password included.

use crate::common::{both_backends, problem, TestApp, ADMIN_PASSWORD};
use serde_json::{json, Value};

/// This process's resident memory in MiB (the server under test runs in it).
fn rss_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

async fn login(app: &TestApp, username: &str, password: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/v1/auth/login"))
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap()
}

/// Asserts a 429 with `Retry-After` and a detail saying when to come back.
async fn throttled(response: reqwest::Response) -> Value {
    let retry_after: u64 =
        response.headers().get("retry-after").expect("Retry-After").to_str().unwrap().parse().unwrap();
    assert!(retry_after >= 1, "{retry_after}");
    let body = problem(response, 429).await;
    assert!(body["detail"].as_str().unwrap().contains("try again in"), "{body}");
    body
}

async fn audit_until(app: &TestApp, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    for _ in 0..500 {
        let page: Value =
            app.get("/api/v1/audit?limit=500&action=auth/login").send().await.unwrap().json().await.unwrap();
        let items = page["items"].as_array().cloned().unwrap_or_default();
        if ready(&items) {
            return items;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the audit log never showed the throttled sign-ins");
}

async fn a_burst_of_wrong_passwords_costs_bounded_memory_and_locks_the_account(app: TestApp) {
    let before = rss_mib();
    let attempts = (0..200).map(|i| {
        let app = &app;
        async move { login(app, "admin", &format!("wrong-password-{i}")).await.status().as_u16() }
    });
    let statuses = futures_util::future::join_all(attempts).await;
    let grown = rss_mib().saturating_sub(before);
    // Unbounded, each attempt held an Argon2 block (~19 MiB): gigabytes for 200.
    assert!(grown < 400, "RSS grew by {grown} MiB during the burst");
    assert!(statuses.iter().all(|s| [401, 429, 503].contains(s)), "{statuses:?}");
    assert!(statuses.iter().filter(|&&s| s == 401).count() < 50, "most attempts never reach the hash: {statuses:?}");

    // Locked: even the right password waits.
    throttled(login(&app, "admin", ADMIN_PASSWORD).await).await;

    let items = audit_until(&app, |items| items.iter().any(|e| e["status"] == 429)).await;
    let entry = items.iter().find(|e| e["status"] == 429).unwrap();
    assert_eq!(entry["actor"]["name"], "admin");
    assert!(entry["detail"].as_str().unwrap().contains("too many failed sign-ins"), "{entry}");
}

async fn a_locked_account_does_not_lock_other_accounts(app: TestApp) {
    app.post("/api/v1/users")
        .json(&json!({"username": "ed", "password": "password-123", "role": "editor"}))
        .send()
        .await
        .unwrap();
    for _ in 0..5 {
        problem(login(&app, "admin", "not-the-password").await, 401).await;
    }
    let body = throttled(login(&app, "admin", ADMIN_PASSWORD).await).await;
    assert!(body["detail"].as_str().unwrap().contains("this account"), "{body}");
    assert_eq!(login(&app, "ed", "password-123").await.status(), 200);
}

async fn many_failures_from_one_address_lock_that_address(app: TestApp) {
    for i in 0..20 {
        problem(login(&app, &format!("guess-{i}"), "not-the-password").await, 401).await;
    }
    let body = throttled(login(&app, "admin", ADMIN_PASSWORD).await).await;
    assert!(body["detail"].as_str().unwrap().contains("your address"), "{body}");
}
both_backends!(
    a_burst_of_wrong_passwords_costs_bounded_memory_and_locks_the_account,
    a_locked_account_does_not_lock_other_accounts,
    many_failures_from_one_address_lock_that_address
);

/// Behind a proxy every caller shares the proxy's address: the one it forwards counts instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_proxy_the_forwarded_address_is_throttled() {
    let app = TestApp::spawn_with(crate::common::Backend::Sqlite, |s| s.behind_proxy = true).await;
    let from = |client: &str, username: &str, password: &str| {
        app.client
            .post(app.url("/api/v1/auth/login"))
            .header("x-forwarded-for", format!("198.51.100.1, {client}"))
            .json(&json!({"username": username, "password": password}))
            .send()
    };
    for i in 0..20 {
        problem(from("203.0.113.5", &format!("guess-{i}"), "not-the-password").await.unwrap(), 401).await;
    }
    throttled(from("203.0.113.5", "admin", ADMIN_PASSWORD).await.unwrap()).await;
    assert_eq!(
        from("203.0.113.6", "admin", ADMIN_PASSWORD).await.unwrap().status(),
        200,
        "another client behind the same proxy"
    );
}
