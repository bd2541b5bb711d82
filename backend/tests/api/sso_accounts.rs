//! Single sign-on's accounts: linking a local user, disabling an SSO user, closing password
//! sign-in, the command line's device flow (the API and the real binary), and the admins'
//! mapping preview and local users' groups.

use crate::common::{fresh_database, on_both, Backend};
use crate::sso_harness::{plain, refused_with, Sso};
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn linking_a_local_user_needs_permission_and_a_verified_email(backend: Backend) {
    let sso = Sso::start(backend, |s| s.oidc.link_local_users = true).await;
    let created = sso
        .app
        .post("/api/v1/users")
        .json(&json!({"username": "hal@example.com", "password": "password-123", "role": "viewer"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let unverified = json!({"sub": "u-hal", "email": "hal@example.com", "email_verified": false, "groups": ["devs"]});
    refused_with(&sso.sign_in(&Sso::browser(), unverified).await, "email_unverified");
    sso.audited("needs the provider to say the email is verified").await;

    let verified = json!({"sub": "u-hal", "email": "hal@example.com", "email_verified": true, "groups": ["devs"]});
    let browser = Sso::browser();
    assert_eq!(sso.sign_in(&browser, verified).await, "/instances");
    let me: Value = sso.me(&browser).await.json().await.unwrap();
    assert_eq!((me["username"].as_str(), me["role"].as_str()), (Some("hal@example.com"), Some("editor")));
    // The old password stops working once the user is linked.
    let by_password = plain()
        .post(sso.app.url("/api/v1/auth/login"))
        .json(&json!({"username": "hal@example.com", "password": "password-123"}))
        .send()
        .await
        .unwrap();
    assert_eq!(by_password.status(), StatusCode::UNAUTHORIZED);
}

async fn a_disabled_sso_user_is_refused(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let user = json!({"sub": "u-ivy", "preferred_username": "ivy", "groups": ["devs"]});
    let browser = Sso::browser();
    sso.sign_in(&browser, user.clone()).await;
    let ivy = sso.users().await.into_iter().find(|u| u["username"] == "ivy").unwrap();
    let path = format!("/api/v1/users/{}", ivy["id"].as_str().unwrap());
    let disabled = sso.app.patch(&path).json(&json!({"disabled": true})).send().await.unwrap();
    assert_eq!(disabled.status(), 200);
    assert_eq!(sso.me(&browser).await.status(), StatusCode::UNAUTHORIZED, "the session ended");
    refused_with(&sso.sign_in(&Sso::browser(), user).await, "disabled");
    sso.audited("`ivy` is disabled in Trellis").await;
}

/// `TRELLIS_PASSWORD_LOGIN=false`: every password is refused, and the sign-in page is told.
#[tokio::test]
async fn closed_password_login_refuses_every_password() {
    let (database_url, _dir) = fresh_database(Backend::Sqlite).await;
    let mut serve = crate::common::serve_config();
    serve.password_login = false;
    let server = trellis::server::Server::build(crate::common::db_config(&database_url), serve).await.unwrap();
    let addr = server.addr;
    server.spawn();
    let providers: Value =
        plain().get(format!("http://{addr}/api/v1/auth/providers")).send().await.unwrap().json().await.unwrap();
    assert_eq!(providers, json!({"password": false, "oidc": null}));
    let by_password = plain()
        .post(format!("http://{addr}/api/v1/auth/login"))
        .json(&json!({"username": "admin", "password": crate::common::ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(by_password.status(), StatusCode::FORBIDDEN);
}

async fn the_command_line_signs_in_through_the_device_flow(backend: Backend) {
    let sso = Sso::start(backend, |s| s.oidc.default_role = Some("viewer".into())).await;
    let client = plain();
    let started: Value =
        client.post(sso.app.url("/api/v1/auth/oidc/device")).send().await.unwrap().json().await.unwrap();
    let device_code = started["device_code"].as_str().unwrap().to_owned();
    assert_eq!(started["user_code"], "WDJB-MJHT");
    let poll =
        || client.post(sso.app.url("/api/v1/auth/oidc/device/token")).json(&json!({"device_code": device_code})).send();
    assert_eq!(poll().await.unwrap().status(), StatusCode::ACCEPTED, "pending until the person approves");
    sso.provider.next_user(json!({"sub": "u-jo", "preferred_username": "jo", "groups": []}));
    sso.provider.approve_device(&device_code);
    let signed_in = poll().await.unwrap();
    assert_eq!(signed_in.status(), 200);
    let token = signed_in.json::<Value>().await.unwrap()["access_token"].as_str().unwrap().to_owned();
    let me: Value =
        client.get(sso.app.url("/api/v1/auth/me")).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    assert_eq!((me["username"].as_str(), me["role"].as_str()), (Some("jo"), Some("viewer")));
}

/// `trellis login --sso`: the real binary, the code shown, the profile saved with the mapped role.
async fn trellis_login_sso_signs_the_terminal_in(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    sso.provider.next_user(json!({"sub": "u-lu", "preferred_username": "lu", "groups": ["ops"]}));
    sso.provider.approve_devices_at_once();
    let cli = crate::cli_client::Client::with_env(vec![]);
    let out = cli.run(&["login", "--url", &sso.app.url(""), "--sso"]).await;
    let (stdout, stderr) = (crate::cli_client::stdout(&out), crate::cli_client::stderr(&out));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("enter the code WDJB-MJHT"), "{stderr}");
    assert!(format!("{stdout}{stderr}").contains("as lu (operator)"), "{stdout}\n{stderr}");
}

async fn admins_preview_the_mapping_and_set_local_users_groups(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let preview: Value = sso
        .app
        .post("/api/v1/auth/oidc/mapping/preview")
        .json(&json!({"groups": ["/OPS", "devs"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!((preview["role"].as_str(), preview["rule"].as_str()), (Some("editor"), Some("devs=editor")));
    let refused: Value = sso
        .app
        .post("/api/v1/auth/oidc/mapping/preview")
        .json(&json!({"groups": ["sales"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(refused["role"], Value::Null);
    assert!(refused["explanation"].as_str().unwrap().contains("refused"));

    let admin_id = sso.users().await[0]["id"].as_str().unwrap().to_owned();
    let grouped = sso
        .app
        .patch(&format!("/api/v1/users/{admin_id}"))
        .json(&json!({"groups": ["ops", "ops", "oncall"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(grouped.status(), 200);
    assert_eq!(sso.users().await[0]["groups"], json!(["ops", "oncall"]));
}

on_both!(
    linking_a_local_user_needs_permission_and_a_verified_email,
    a_disabled_sso_user_is_refused,
    the_command_line_signs_in_through_the_device_flow,
    trellis_login_sso_signs_the_terminal_in,
    admins_preview_the_mapping_and_set_local_users_groups,
);
