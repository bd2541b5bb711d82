//! Single sign-on against an OpenID Connect provider in this test binary
//! (`oidc_provider.rs`, driven through `sso_harness.rs`): a browser's sign-in hop by hop, every
//! refusal leaving no session and an audit entry, demotion at the next sign-in, sign-out at the
//! provider, key rotation, and bad callbacks that must never redirect off-site or answer 5xx.

use crate::common::{on_both, Backend, TestApp};
use crate::oidc_provider::{Minted, Provider};
use crate::sso_harness::{plain, refused_with, Sso};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn a_person_of_a_mapped_group_signs_in_with_its_role(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let providers: Value =
        plain().get(sso.app.url("/api/v1/auth/providers")).send().await.unwrap().json().await.unwrap();
    assert_eq!(
        providers,
        json!({"password": true, "oidc": {"name": "Test IdP", "login_url": "/api/v1/auth/oidc/login", "reachable": true}})
    );

    let browser = Sso::browser();
    let user =
        json!({"sub": "u-ada", "preferred_username": "ada", "email": "ada@example.com", "groups": ["/Devs", "sales"]});
    assert_eq!(sso.sign_in(&browser, user).await, "/instances");
    let me: Value = sso.me(&browser).await.json().await.unwrap();
    assert_eq!((me["username"].as_str(), me["role"].as_str()), (Some("ada"), Some("editor")));

    let ada = sso.users().await.into_iter().find(|u| u["username"] == "ada").unwrap();
    assert_eq!((ada["source"].as_str(), ada["subject"].as_str()), (Some("oidc"), Some("u-ada")));
    assert_eq!(ada["groups"], json!(["/Devs", "sales"]));
    let entry = sso.audited("signed in through single sign-on as editor").await;
    assert_eq!(entry["actor"]["name"], "ada");

    // No password works for an SSO user.
    let by_password = plain()
        .post(sso.app.url("/api/v1/auth/login"))
        .json(&json!({"username": "ada", "password": "anything-at-all"}))
        .send()
        .await
        .unwrap();
    assert_eq!(by_password.status(), StatusCode::UNAUTHORIZED);
}

async fn the_role_is_derived_again_at_every_sign_in(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let browser = Sso::browser();
    sso.sign_in(&browser, json!({"sub": "u-bo", "preferred_username": "bo", "groups": ["trellis-admins"]})).await;
    assert_eq!(sso.me(&browser).await.json::<Value>().await.unwrap()["role"], "admin");

    let later = Sso::browser();
    sso.sign_in(&later, json!({"sub": "u-bo", "preferred_username": "bo", "groups": ["ops"]})).await;
    assert_eq!(sso.me(&later).await.json::<Value>().await.unwrap()["role"], "operator");
    // The role is the user's, not the token's: the first browser is demoted too.
    assert_eq!(sso.me(&browser).await.json::<Value>().await.unwrap()["role"], "operator");
    sso.audited("role admin → operator by the group mapping (`ops=operator`)").await;

    // Out of every mapped group, with no default role: refused, and the session stays as it was.
    let third = Sso::browser();
    let location = sso.sign_in(&third, json!({"sub": "u-bo", "preferred_username": "bo", "groups": ["sales"]})).await;
    refused_with(&location, "no_role");
    assert_eq!(sso.me(&third).await.status(), StatusCode::UNAUTHORIZED);
    sso.audited("single sign-on refused (no_role)").await;
}

async fn sign_out_ends_the_session_and_goes_on_to_the_provider(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let browser = Sso::browser();
    sso.sign_in(&browser, json!({"sub": "u-cy", "preferred_username": "cy", "groups": ["devs"]})).await;
    let cookie_before = sso.me(&browser).await;
    assert_eq!(cookie_before.status(), 200);

    let out = browser
        .post(sso.app.url("/api/v1/auth/logout"))
        .header("origin", sso.app.url(""))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 200);
    let url = out.json::<Value>().await.unwrap()["end_session_url"].as_str().unwrap().to_owned();
    assert!(url.starts_with(&format!("{}/logout?id_token_hint=", sso.provider.issuer)), "{url}");
    assert!(url.contains("post_logout_redirect_uri="), "{url}");
    assert_eq!(sso.me(&browser).await.status(), StatusCode::UNAUTHORIZED);
}

/// Each way a sign-in can be forged or go wrong: refused, no session, the reason audited.
async fn every_refusal_leaves_no_session_and_an_audit_entry(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let user = json!({"sub": "u-eve", "preferred_username": "eve", "groups": ["devs"]});
    type Bend = Box<dyn Fn(&mut Minted, &Provider) + Send + Sync>;
    let cases: Vec<(&str, Bend, &str)> = vec![
        (
            "wrong issuer",
            Box::new(|m, _| m.claims["iss"] = json!("https://other.example")),
            "its issuer is not TRELLIS_OIDC_ISSUER",
        ),
        ("wrong audience", Box::new(|m, _| m.claims["aud"] = json!("someone-else")), "its audience is not this client"),
        ("wrong nonce", Box::new(|m, _| m.claims["nonce"] = json!("not-the-nonce")), "nonce does not match"),
        ("expired", Box::new(|m, _| m.claims["exp"] = json!(chrono::Utc::now().timestamp() - 120)), "it expired"),
        (
            "alg none",
            Box::new(|m, _| {
                use base64::Engine;
                let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
                m.raw = Some(format!("{}.{}.", b64(&json!({"alg": "none", "typ": "JWT"})), b64(&m.claims)));
            }),
            "algorithm `none` is not allowed",
        ),
        (
            "HMAC keyed with the public key",
            Box::new(|m, _| {
                let public = serde_json::to_vec(&Provider::public_jwk(0)).unwrap();
                let header = Header { kid: Some("key-0".into()), ..Header::new(Algorithm::HS256) };
                m.raw = Some(jsonwebtoken::encode(&header, &m.claims, &EncodingKey::from_secret(&public)).unwrap());
            }),
            "algorithm `HS256` is not allowed",
        ),
        ("azp of another client", Box::new(|m, _| m.claims["azp"] = json!("another-client")), "authorized party"),
        (
            "no sub",
            Box::new(|m, _| {
                m.claims.as_object_mut().unwrap().remove("sub");
            }),
            "it has no `sub` claim",
        ),
    ];
    for (what, bend, reason) in cases {
        sso.provider.tamper(bend);
        let browser = Sso::browser();
        let location = sso.sign_in(&browser, user.clone()).await;
        refused_with(&location, "token");
        assert_eq!(sso.me(&browser).await.status(), StatusCode::UNAUTHORIZED, "{what}");
        let entry = sso.audited(reason).await;
        assert!(entry["detail"].as_str().unwrap().starts_with("single sign-on refused (token)"), "{what}: {entry}");
    }
    sso.provider.tamper(|_, _| {});

    // A key the provider does not publish.
    sso.provider.sign_with_unpublished_key();
    let browser = Sso::browser();
    refused_with(&sso.sign_in(&browser, user.clone()).await, "token");
    sso.audited("signed by a key the provider does not publish").await;
    sso.provider.sign_with_unpublished_key();

    assert!(sso.users().await.iter().all(|u| u["username"] != "eve"), "no refused sign-in made a user");
}

async fn forged_and_replayed_callbacks_are_refused(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    sso.provider.next_user(json!({"sub": "u-fay", "preferred_username": "fay", "groups": ["devs"]}));

    // A replayed code: the first use signs in, the second (same URL, same browser) finds no attempt.
    let browser = Sso::browser();
    let callback = sso.to_callback(&browser, "/").await;
    let first = browser.get(&callback).send().await.unwrap();
    assert_eq!(first.headers()["location"], "/");
    let again = Sso::browser();
    sso.to_callback(&again, "/").await;
    let replayed = again.get(&callback).send().await.unwrap();
    refused_with(replayed.headers()["location"].to_str().unwrap(), "state");

    // A state from another browser's attempt (a forced sign-in): this browser began none.
    let victim = Sso::browser();
    let attacker = Sso::browser();
    let attackers_callback = sso.to_callback(&attacker, "/").await;
    let forced = victim.get(&attackers_callback).send().await.unwrap();
    refused_with(forced.headers()["location"].to_str().unwrap(), "state");
    assert_eq!(sso.me(&victim).await.status(), StatusCode::UNAUTHORIZED);

    // The right state with a code the provider never issued, or a PKCE verifier it does not match.
    let browser = Sso::browser();
    let callback = sso.to_callback(&browser, "/").await;
    let mut url = url::Url::parse(&callback).unwrap();
    let state = url.query_pairs().find(|(k, _)| k == "state").unwrap().1.into_owned();
    url.set_query(Some(&format!("code=never-issued&state={state}")));
    let wrong_code = browser.get(url.as_str()).send().await.unwrap();
    refused_with(wrong_code.headers()["location"].to_str().unwrap(), "token");
    sso.audited("invalid_grant").await;

    for bad in
        ["", "?code=abc", "?state=", &format!("?code={}&state=x", "c".repeat(5000)), "?error=access_denied&state=x"]
    {
        let answer = Sso::browser().get(sso.app.url(&format!("/api/v1/auth/oidc/callback{bad}"))).send().await.unwrap();
        assert!(answer.status().is_redirection() || answer.status().is_client_error(), "{bad}: {}", answer.status());
        if let Some(location) = answer.headers().get("location") {
            assert!(location.to_str().unwrap().starts_with("/login?error="), "{bad}: {location:?}");
        }
    }
    for evil in ["//evil.example", "https://evil.example", "/\\evil.example"] {
        let answer = Sso::browser()
            .get(sso.app.url(&format!("/api/v1/auth/oidc/login?return_to={}", urlencode(evil))))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{evil}");
        assert!(answer.headers().get("location").is_none());
    }
}

fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

async fn keys_rotated_at_the_provider_are_fetched_again(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let user = json!({"sub": "u-gus", "preferred_username": "gus", "groups": ["devs"]});
    assert_eq!(sso.sign_in(&Sso::browser(), user.clone()).await, "/instances");
    sso.provider.rotate_keys();
    assert_eq!(sso.sign_in(&Sso::browser(), user).await, "/instances", "the new key is fetched");
}

/// Groups only userinfo carries are used when userinfo is about the same subject, never otherwise.
async fn userinfo_counts_only_for_the_same_subject(backend: Backend) {
    let sso = Sso::start(backend, |_| {}).await;
    let user = json!({"sub": "u-kim", "preferred_username": "kim"});
    sso.provider.userinfo_override(json!({"sub": "u-kim", "groups": ["devs"]}));
    let browser = Sso::browser();
    assert_eq!(sso.sign_in(&browser, user.clone()).await, "/instances");
    assert_eq!(sso.me(&browser).await.json::<Value>().await.unwrap()["role"], "editor");

    sso.provider.userinfo_override(json!({"sub": "someone-else", "groups": ["trellis-admins"]}));
    refused_with(&sso.sign_in(&Sso::browser(), user).await, "no_role");
}

on_both!(
    userinfo_counts_only_for_the_same_subject,
    a_person_of_a_mapped_group_signs_in_with_its_role,
    the_role_is_derived_again_at_every_sign_in,
    sign_out_ends_the_session_and_goes_on_to_the_provider,
    every_refusal_leaves_no_session_and_an_audit_entry,
    forged_and_replayed_callbacks_are_refused,
    keys_rotated_at_the_provider_are_fetched_again,
);

/// Without a provider configured, the routes say so and the sign-in page offers passwords only.
#[tokio::test]
async fn without_a_provider_only_passwords_are_offered() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let providers: Value =
        app.client.get(app.url("/api/v1/auth/providers")).send().await.unwrap().json().await.unwrap();
    assert_eq!(providers, json!({"password": true, "oidc": null}));
    let login = app.client.get(app.url("/api/v1/auth/oidc/login")).send().await.unwrap();
    assert_eq!(login.status(), StatusCode::NOT_FOUND);
}
