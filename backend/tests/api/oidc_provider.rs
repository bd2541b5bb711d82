//! An OpenID Connect provider for the single sign-on tests, on 127.0.0.1: discovery, keys,
//! authorize (signing in whoever `next_user` says, at once), token (authorization code with
//! PKCE, and the device grant), userinfo, end-session and device authorization. It signs ID
//! tokens with ES256 keys (jsonwebtoken); `tamper` lets a test bend what it issues.

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub const CLIENT_ID: &str = "trellis-tests";
pub const CLIENT_SECRET: &str = "client-secret-for-tests";

/// Two P-256 keys (PKCS#8 DER), made for these tests: the provider signs with one and may
/// rotate to the other.
const KEYS: [&str; 2] = [
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgFF6i5Sab5mpwpvpjV3nkrhWtg0O3jbWbjz+tVLQO+hyhRANCAARRTYsVwphmdSydYkfEtO2TMJGo/rklBXV1Hu8LcssX7MX36AqK1HYIIby3zyLYEkn6aBWW0Zzp/lNzf9jKO72g",
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg+Aq4aO5Ve48FjCPpA/i36aPwCgrbaiJoNiFUrYrexByhRANCAASy6zEcE8iphLoOQI3g0CV8li8m+BVDSXxmGxuFC67VIQ8gWqX1M2UJ3+ixagKmzFarUsWZNVzpQYJ58VjAhU6e",
];

/// What an ID token is made of before signing; `tamper` may change any of it, or replace the
/// whole token.
pub struct Minted {
    pub header: Header,
    pub claims: Value,
    /// Used instead of signing when set.
    pub raw: Option<String>,
}

type Tamper = Box<dyn Fn(&mut Minted, &Provider) + Send + Sync>;

struct Grant {
    claims: Value,
    challenge: String,
    redirect_uri: String,
    used: bool,
}

#[derive(Default)]
struct Inner {
    /// Which key signs (index into `KEYS`), and which keys `/jwks` publishes.
    signing: usize,
    published: Vec<usize>,
    next_user: Value,
    grants: HashMap<String, Grant>,
    /// Device code → the user who approved it (`None`: still pending).
    devices: HashMap<String, Option<Value>>,
    /// Access token → userinfo claims.
    userinfo: HashMap<String, Value>,
    /// Userinfo claims that replace the real ones (a different `sub`, say).
    userinfo_override: Option<Value>,
    tamper: Option<Arc<Tamper>>,
    /// Device authorizations are approved (as `next_user`) as soon as they begin.
    approve_devices_at_once: bool,
    /// Discovery names no device authorization endpoint (many providers have none).
    no_device_flow: bool,
}

#[derive(Clone)]
pub struct Provider {
    pub issuer: String,
    inner: Arc<Mutex<Inner>>,
}

impl Provider {
    pub async fn start() -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let inner = Inner { published: vec![0], next_user: json!({"sub": "user-1"}), ..Inner::default() };
        let provider = Provider { issuer, inner: Arc::new(Mutex::new(inner)) };
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/userinfo", get(userinfo))
            .route("/device", post(device))
            .route("/logout", get(|| async { "signed out" }))
            .with_state(provider.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        provider
    }

    /// The claims (besides iss, aud, exp, iat, nonce) of whoever signs in next.
    pub fn next_user(&self, claims: Value) {
        self.inner.lock().unwrap().next_user = claims;
    }

    pub fn tamper(&self, tamper: impl Fn(&mut Minted, &Provider) + Send + Sync + 'static) {
        self.inner.lock().unwrap().tamper = Some(Arc::new(Box::new(tamper)));
    }

    pub fn userinfo_override(&self, claims: Value) {
        self.inner.lock().unwrap().userinfo_override = Some(claims);
    }

    /// Signs with the other key from now on and publishes only it.
    pub fn rotate_keys(&self) {
        let mut inner = self.inner.lock().unwrap();
        inner.signing = 1 - inner.signing;
        inner.published = vec![inner.signing];
    }

    /// Signs with the other key without publishing it (a key nobody can check).
    pub fn sign_with_unpublished_key(&self) {
        let mut inner = self.inner.lock().unwrap();
        inner.signing = 1 - inner.signing;
    }

    /// Every device authorization from now on is approved at once, as `next_user`.
    pub fn approve_devices_at_once(&self) {
        self.inner.lock().unwrap().approve_devices_at_once = true;
    }

    /// Discovery stops naming a device authorization endpoint (call before Trellis reads it:
    /// it keeps discovery for an hour).
    pub fn offer_no_device_flow(&self) {
        self.inner.lock().unwrap().no_device_flow = true;
    }

    /// The person approves the device authorization `device_code`, as `next_user`.
    pub fn approve_device(&self, device_code: &str) {
        let mut inner = self.inner.lock().unwrap();
        let user = inner.next_user.clone();
        inner.devices.insert(device_code.to_owned(), Some(user));
    }

    pub fn encoding_key(index: usize) -> EncodingKey {
        EncodingKey::from_ec_der(&STANDARD.decode(KEYS[index]).unwrap())
    }

    pub fn public_jwk(index: usize) -> Jwk {
        let mut jwk = Jwk::from_encoding_key(&Self::encoding_key(index), Algorithm::ES256).unwrap();
        jwk.common.key_id = Some(format!("key-{index}"));
        jwk.common.key_algorithm = Some(KeyAlgorithm::ES256);
        jwk
    }

    fn mint(&self, user: &Value, nonce: Option<&str>) -> String {
        let (signing, tamper) = {
            let inner = self.inner.lock().unwrap();
            (inner.signing, inner.tamper.clone())
        };
        let now = chrono::Utc::now().timestamp();
        let mut claims = json!({"iss": self.issuer, "aud": CLIENT_ID, "iat": now, "exp": now + 300});
        for (k, v) in user.as_object().unwrap() {
            claims[k] = v.clone();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = json!(nonce);
        }
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(format!("key-{signing}"));
        let mut minted = Minted { header, claims, raw: None };
        if let Some(tamper) = tamper {
            tamper(&mut minted, self);
        }
        minted.raw.unwrap_or_else(|| {
            jsonwebtoken::encode(&minted.header, &minted.claims, &Self::encoding_key(signing)).unwrap()
        })
    }

    /// Tokens for `user`, remembering its userinfo under the access token.
    fn tokens(&self, user: &Value, nonce: Option<&str>) -> Value {
        let access_token = format!("at-{}", uuid::Uuid::new_v4());
        let id_token = self.mint(user, nonce);
        self.inner.lock().unwrap().userinfo.insert(access_token.clone(), user.clone());
        json!({"access_token": access_token, "token_type": "Bearer", "id_token": id_token, "expires_in": 300})
    }
}

async fn discovery(State(p): State<Provider>) -> Json<Value> {
    let i = &p.issuer;
    let mut document = json!({
        "issuer": i, "authorization_endpoint": format!("{i}/authorize"), "token_endpoint": format!("{i}/token"),
        "jwks_uri": format!("{i}/jwks"), "userinfo_endpoint": format!("{i}/userinfo"),
        "end_session_endpoint": format!("{i}/logout"), "device_authorization_endpoint": format!("{i}/device"),
        "id_token_signing_alg_values_supported": ["ES256"], "code_challenge_methods_supported": ["S256"],
    });
    if p.inner.lock().unwrap().no_device_flow {
        document.as_object_mut().unwrap().remove("device_authorization_endpoint");
    }
    Json(document)
}

async fn jwks(State(p): State<Provider>) -> Json<JwkSet> {
    let published = p.inner.lock().unwrap().published.clone();
    Json(JwkSet { keys: published.into_iter().map(Provider::public_jwk).collect() })
}

async fn authorize(State(p): State<Provider>, Query(q): Query<HashMap<String, String>>) -> Response {
    let param = |k: &str| q.get(k).cloned().unwrap_or_default();
    if param("client_id") != CLIENT_ID || param("response_type") != "code" || param("code_challenge_method") != "S256" {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    let code = format!("code-{}", uuid::Uuid::new_v4());
    let mut claims = p.inner.lock().unwrap().next_user.clone();
    claims["nonce"] = json!(param("nonce"));
    let grant = Grant { claims, challenge: param("code_challenge"), redirect_uri: param("redirect_uri"), used: false };
    p.inner.lock().unwrap().grants.insert(code.clone(), grant);
    let state = url::form_urlencoded::byte_serialize(param("state").as_bytes()).collect::<String>();
    Redirect::to(&format!("{}?code={code}&state={state}", param("redirect_uri"))).into_response()
}

fn oauth_error(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response()
}

async fn token(State(p): State<Provider>, headers: HeaderMap, Form(form): Form<HashMap<String, String>>) -> Response {
    let expected = format!("Basic {}", STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}")));
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "invalid_client"}))).into_response();
    }
    let param = |k: &str| form.get(k).cloned().unwrap_or_default();
    match param("grant_type").as_str() {
        "authorization_code" => {
            let claims = {
                let mut inner = p.inner.lock().unwrap();
                let Some(grant) = inner.grants.get_mut(&param("code")) else { return oauth_error("invalid_grant") };
                let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(param("code_verifier").as_bytes()));
                if grant.used || grant.challenge != challenge || grant.redirect_uri != param("redirect_uri") {
                    return oauth_error("invalid_grant");
                }
                grant.used = true;
                grant.claims.clone()
            };
            let mut user = claims.clone();
            let nonce = user.as_object_mut().unwrap().remove("nonce");
            Json(p.tokens(&user, nonce.as_ref().and_then(Value::as_str))).into_response()
        }
        "urn:ietf:params:oauth:grant-type:device_code" => {
            let approved = p.inner.lock().unwrap().devices.get(&param("device_code")).cloned();
            match approved {
                None => oauth_error("invalid_grant"),
                Some(None) => oauth_error("authorization_pending"),
                Some(Some(user)) => Json(p.tokens(&user, None)).into_response(),
            }
        }
        _ => oauth_error("unsupported_grant_type"),
    }
}

async fn userinfo(State(p): State<Provider>, headers: HeaderMap) -> Response {
    let token = headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    let inner = p.inner.lock().unwrap();
    match token.and_then(|t| inner.userinfo.get(t)) {
        Some(claims) => Json(inner.userinfo_override.clone().unwrap_or_else(|| claims.clone())).into_response(),
        None => StatusCode::UNAUTHORIZED.into_response(),
    }
}

async fn device(State(p): State<Provider>) -> Json<Value> {
    let device_code = format!("dc-{}", uuid::Uuid::new_v4());
    let mut inner = p.inner.lock().unwrap();
    let approved = inner.approve_devices_at_once.then(|| inner.next_user.clone());
    inner.devices.insert(device_code.clone(), approved);
    drop(inner);
    Json(
        json!({"device_code": device_code, "user_code": "WDJB-MJHT", "verification_uri": format!("{}/device", p.issuer),
                "expires_in": 600, "interval": 1}),
    )
}
