//! The command line's sign-in through the browser where the provider has no device flow: the
//! callback hands a one-time code to the command line's loopback port, traded once, and only
//! with the PKCE verifier that began it — through the API and through the real binary, with
//! curl as the browser.

use crate::common::{on_both, Backend};
use crate::sso_harness::{plain, Sso};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// RFC 7636's example pair.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

/// Signs `user` in for a command line on `port`: the callback's answer, with no session set.
async fn loopback_callback(sso: &Sso, port: u16, user: Value) -> reqwest::Response {
    sso.provider.next_user(user);
    let browser = Sso::browser();
    let callback = sso.to_callback_from(&browser, &format!("cli_port={port}&cli_challenge={CHALLENGE}")).await;
    let landed = browser.get(&callback).send().await.unwrap();
    assert!(landed.headers().get("set-cookie").is_none_or(|c| !c.to_str().unwrap().contains("trellis_session")));
    landed
}

/// The confirmation page the callback shows: it names the account, and its Continue link
/// (followed by nothing but the person) carries the one-time code to the loopback port.
async fn confirmed_link(landed: reqwest::Response, account: &str) -> String {
    assert_eq!(landed.status(), 200, "a page to confirm, not a redirect");
    assert!(landed.headers().get("location").is_none());
    let page = landed.text().await.unwrap();
    assert!(page.contains(&format!("<strong>{account}</strong>")), "{page}");
    let start = page.find("http://127.0.0.1:").unwrap_or_else(|| panic!("{page}"));
    page[start..].split('"').next().unwrap().to_owned()
}

async fn trade(sso: &Sso, code: &str, verifier: &str) -> reqwest::Response {
    let body = json!({"code": code, "code_verifier": verifier});
    plain().post(sso.app.url("/api/v1/auth/oidc/cli/token")).json(&body).send().await.unwrap()
}

async fn the_loopback_gets_a_code_worth_a_session_only_with_the_verifier(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let user = json!({"sub": "u-mo", "preferred_username": "mo", "groups": ["ops"]});
    let to = confirmed_link(loopback_callback(&sso, 53_682, user.clone()).await, "mo").await;
    let code = to.strip_prefix("http://127.0.0.1:53682/callback?code=").unwrap_or_else(|| panic!("{to}"));
    let wrong = trade(&sso, code, "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX").await;
    assert_eq!(wrong.status(), StatusCode::FORBIDDEN);
    assert_eq!(trade(&sso, code, VERIFIER).await.status(), StatusCode::FORBIDDEN, "a wrong guess spends the code");

    let to = confirmed_link(loopback_callback(&sso, 53_682, user).await, "mo").await;
    let code = to.rsplit("code=").next().unwrap();
    let traded = trade(&sso, code, VERIFIER).await;
    assert_eq!(traded.status(), 200);
    let token = traded.json::<Value>().await.unwrap()["access_token"].as_str().unwrap().to_owned();
    let me: Value =
        plain().get(sso.app.url("/api/v1/auth/me")).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    assert_eq!((me["username"].as_str(), me["role"].as_str()), (Some("mo"), Some("operator")));
    assert_eq!(trade(&sso, code, VERIFIER).await.status(), StatusCode::FORBIDDEN, "a code trades once");
}

async fn a_refused_command_line_sign_in_tells_the_loopback_why(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let landed = loopback_callback(&sso, 40_000, json!({"sub": "u-nu", "groups": ["sales"]})).await;
    assert_eq!(landed.status(), StatusCode::SEE_OTHER, "a refusal has nothing to confirm");
    assert_eq!(landed.headers()["location"], "http://127.0.0.1:40000/callback?error=no_role");
    sso.audited("single sign-on refused (no_role)").await;
}

async fn a_half_command_line_request_is_refused(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    for query in ["cli_port=5000", &format!("cli_challenge={CHALLENGE}"), "cli_port=5000&cli_challenge=short"] {
        let begun = Sso::browser().get(sso.app.url(&format!("/api/v1/auth/oidc/login?{query}"))).send().await.unwrap();
        assert_eq!(begun.status(), StatusCode::BAD_REQUEST, "{query}");
        let problem: Value = begun.json().await.unwrap();
        assert!(problem["detail"].as_str().unwrap().contains("cli_challenge"), "{problem}");
    }
    let huge = trade(&sso, &"x".repeat(10_000), VERIFIER).await;
    assert_eq!(huge.status(), StatusCode::BAD_REQUEST);
    assert_eq!(trade(&sso, "never-issued", VERIFIER).await.status(), StatusCode::FORBIDDEN);
}

/// `trellis login --sso` against a provider without a device flow: the real binary opens
/// "the browser" (`BROWSER`, here curl keeping cookies and following redirects), which signs
/// in, "clicks" Continue on the confirmation page, and lands on the binary's loopback port.
async fn trellis_login_sso_falls_back_to_the_browser(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    sso.provider.offer_no_device_flow();
    sso.provider.next_user(json!({"sub": "u-oz", "preferred_username": "oz", "groups": ["devs"]}));
    let dir = tempfile::tempdir().unwrap();
    let browser = dir.path().join("browser.sh");
    let jar = dir.path().join("cookies");
    let script = format!(
        "#!/bin/sh\ncurl -s -L -c '{0}' -b '{0}' \"$1\" | grep -o 'http://127.0.0.1:[0-9]*/callback?code=[^\"]*' \
         | head -n 1 | xargs curl -s >/dev/null\n",
        jar.display()
    );
    std::fs::write(&browser, script).unwrap();
    std::fs::set_permissions(&browser, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cli = crate::cli_client::Client::with_env(vec![("BROWSER", browser.display().to_string())]);
    let out = cli.run(&["login", "--url", &sso.app.url(""), "--sso"]).await;
    let (stdout, stderr) = (crate::cli_client::stdout(&out), crate::cli_client::stderr(&out));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("open this address in a browser"), "{stderr}");
    assert!(format!("{stdout}{stderr}").contains("as oz (editor)"), "{stdout}\n{stderr}");
}

on_both!(
    the_loopback_gets_a_code_worth_a_session_only_with_the_verifier,
    a_refused_command_line_sign_in_tells_the_loopback_why,
    a_half_command_line_request_is_refused,
    trellis_login_sso_falls_back_to_the_browser,
);
