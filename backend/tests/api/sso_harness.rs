//! The single sign-on tests' harness: a Trellis configured for the test provider
//! (`oidc_provider.rs`), a browser that follows no redirect, and the audit log read back.

use crate::common::{fresh_database, Backend, TestApp};
use crate::oidc_provider::{Provider, CLIENT_ID, CLIENT_SECRET};
use reqwest::redirect::Policy;
use reqwest::{Client, StatusCode};
use serde_json::Value;
use std::time::Duration;

pub struct Sso {
    pub app: TestApp,
    pub provider: Provider,
}

/// A free loopback port: the public URL (and so the redirect URI) must be known before the
/// server starts.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Sso {
    pub async fn start(backend: Backend, configure: impl FnOnce(&mut trellis::config::ServeConfig)) -> Sso {
        let provider = Provider::start().await;
        let port = free_port();
        let (database_url, dir) = fresh_database(backend).await;
        let issuer = provider.issuer.clone();
        let app = TestApp::spawn_on(database_url, dir, |serve| {
            serve.listen = ([127, 0, 0, 1], port).into();
            serve.public_url = Some(format!("http://127.0.0.1:{port}"));
            serve.oidc.issuer = Some(issuer);
            serve.oidc.client_id = Some(CLIENT_ID.into());
            serve.oidc.client_secret = Some(CLIENT_SECRET.into());
            serve.oidc.name = "Test IdP".into();
            serve.oidc.role_map = "trellis-admins=admin,ops=operator,devs=editor".into();
            configure(serve);
        })
        .await;
        Sso { app, provider }
    }

    /// A browser: keeps cookies, follows no redirect (each hop is checked).
    pub fn browser() -> Client {
        trellis::http_client::builder().cookie_store(true).redirect(Policy::none()).build().unwrap()
    }

    /// Signs in through the provider as `user`; answers the callback's redirect target.
    pub async fn sign_in(&self, browser: &Client, user: Value) -> String {
        self.provider.next_user(user);
        let callback = self.to_callback(browser, "/instances").await;
        let landed = browser.get(&callback).send().await.unwrap();
        assert_eq!(landed.status(), StatusCode::SEE_OTHER, "{:?}", landed.text().await);
        landed.headers()["location"].to_str().unwrap().to_owned()
    }

    /// Begins a sign-in and goes through the provider's form: the callback URL it sends back.
    pub async fn to_callback(&self, browser: &Client, return_to: &str) -> String {
        self.to_callback_from(browser, &format!("return_to={return_to}")).await
    }

    /// As `to_callback`, beginning with the login query `query`.
    pub async fn to_callback_from(&self, browser: &Client, query: &str) -> String {
        let begun = browser.get(self.app.url(&format!("/api/v1/auth/oidc/login?{query}"))).send().await.unwrap();
        assert_eq!(begun.status(), StatusCode::SEE_OTHER);
        let authorize = begun.headers()["location"].to_str().unwrap().to_owned();
        assert!(authorize.starts_with(&self.provider.issuer), "{authorize}");
        assert!(authorize.contains("code_challenge_method=S256") && authorize.contains("nonce="), "{authorize}");
        let at_provider = browser.get(&authorize).send().await.unwrap();
        assert_eq!(at_provider.status(), StatusCode::SEE_OTHER);
        at_provider.headers()["location"].to_str().unwrap().to_owned()
    }

    pub async fn me(&self, browser: &Client) -> reqwest::Response {
        browser.get(self.app.url("/api/v1/auth/me")).send().await.unwrap()
    }

    pub async fn users(&self) -> Vec<Value> {
        let users: Value = self.app.get("/api/v1/users").send().await.unwrap().json().await.unwrap();
        users["items"].as_array().unwrap().clone()
    }

    /// Waits for an audit entry whose detail contains `text` (the log is written off the request path).
    pub async fn audited(&self, text: &str) -> Value {
        for _ in 0..100 {
            let log: Value = self.app.get("/api/v1/audit?limit=200").send().await.unwrap().json().await.unwrap();
            let found = log["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["detail"].as_str().is_some_and(|d| d.contains(text)));
            if let Some(entry) = found {
                return entry.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no audit entry mentions {text:?}");
    }
}

/// A client without cookies (reqwest needs Trellis's TLS setup to build one).
pub fn plain() -> Client {
    trellis::http_client::builder().build().unwrap()
}

pub fn refused_with(location: &str, code: &str) {
    assert_eq!(location, format!("/login?error={code}"), "refused with {code}");
}
