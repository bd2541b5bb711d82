//! The provider as this server talks to it: its discovery document and keys (cached, the
//! keys fetched again when a token names one they lack), and the requests of the flows
//! (authorize URL, code exchange, userinfo, device authorization, end-session URL).
//!
//! The issuer is the operator's choice (often on a private network), so these requests are
//! not held to `TRELLIS_HTTP_ALLOW` as `http` nodes are; they follow no redirects and wait
//! at most `TIMEOUT` each.

use super::settings::OidcSettings;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::Algorithm;
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;
use url::Url;

const TIMEOUT: Duration = Duration::from_secs(10);
/// A discovery document and keys are fetched again after this long.
const CACHE_FOR: Duration = Duration::from_secs(3600);
/// After a failed discovery, how long before trying again (the sign-in page asks often).
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(5);
/// The least time between two key fetches caused by unknown `kid`s: a token naming keys at
/// random must not make this server hammer the provider.
const REFETCH_KEYS_AFTER: Duration = Duration::from_secs(10);
/// The largest answer read from the provider.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// What discovery says (the fields this server uses).
#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub jwks_uri: String,
    pub userinfo_endpoint: Option<String>,
    pub end_session_endpoint: Option<String>,
    pub device_authorization_endpoint: Option<String>,
}

struct Cached {
    discovery: Arc<Discovery>,
    keys: Arc<JwkSet>,
    fetched: Instant,
    /// When keys were last fetched because a token named one they lacked.
    refetched_for_unknown_kid: Option<Instant>,
}

/// The token endpoint's answer.
#[derive(Debug, Deserialize)]
pub struct Tokens {
    pub id_token: Option<String>,
    pub access_token: Option<String>,
}

/// A device authorization: what the person is told, and what the poller sends.
#[derive(Debug, Clone, Deserialize)]
pub struct DeviceAuthorization {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: Option<String>,
    pub expires_in: u64,
    pub interval: Option<u64>,
}

/// Why talking to the provider failed.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("the provider cannot be reached: {0}")]
    Unreachable(String),
    #[error("the provider answered: {0}")]
    Refused(String),
}

pub struct Provider {
    pub settings: OidcSettings,
    http: reqwest::Client,
    cache: Mutex<Option<Cached>>,
    last_failure: Mutex<Option<Instant>>,
}

impl Provider {
    pub fn new(settings: OidcSettings) -> anyhow::Result<Provider> {
        let http =
            crate::http_client::builder().timeout(TIMEOUT).redirect(reqwest::redirect::Policy::none()).build()?;
        Ok(Provider { settings, http, cache: Mutex::new(None), last_failure: Mutex::new(None) })
    }

    /// The discovery document, from the cache while it is fresh.
    pub async fn discovery(&self) -> Result<Arc<Discovery>, ProviderError> {
        Ok(self.cached().await?.0)
    }

    async fn cached(&self) -> Result<(Arc<Discovery>, Arc<JwkSet>), ProviderError> {
        let mut cache = self.cache.lock().await;
        if let Some(c) = cache.as_ref().filter(|c| c.fetched.elapsed() < CACHE_FOR) {
            return Ok((c.discovery.clone(), c.keys.clone()));
        }
        let mut last_failure = self.last_failure.lock().await;
        if last_failure.is_some_and(|at| at.elapsed() < RETRY_FAILED_AFTER) {
            // A stale cache beats none while the provider is away.
            if let Some(c) = cache.as_ref() {
                return Ok((c.discovery.clone(), c.keys.clone()));
            }
            return Err(ProviderError::Unreachable("it did not answer a moment ago".into()));
        }
        match self.fetch_all().await {
            Ok((discovery, keys)) => {
                *last_failure = None;
                let (discovery, keys) = (Arc::new(discovery), Arc::new(keys));
                *cache = Some(Cached {
                    discovery: discovery.clone(),
                    keys: keys.clone(),
                    fetched: Instant::now(),
                    refetched_for_unknown_kid: None,
                });
                Ok((discovery, keys))
            }
            Err(e) => {
                *last_failure = Some(Instant::now());
                tracing::warn!(issuer = %self.settings.issuer, error = %e, "single sign-on: discovery failed");
                match cache.as_ref() {
                    Some(c) => Ok((c.discovery.clone(), c.keys.clone())),
                    None => Err(e),
                }
            }
        }
    }

    async fn fetch_all(&self) -> Result<(Discovery, JwkSet), ProviderError> {
        let url = format!("{}/.well-known/openid-configuration", self.settings.issuer.trim_end_matches('/'));
        let discovery: Discovery = self.get_json(&url).await?;
        if discovery.issuer != self.settings.issuer {
            return Err(ProviderError::Refused(format!(
                "its discovery document names the issuer `{}`, not `{}` as TRELLIS_OIDC_ISSUER says",
                discovery.issuer, self.settings.issuer
            )));
        }
        let keys: JwkSet = self.get_json(&discovery.jwks_uri).await?;
        Ok((discovery, keys))
    }

    /// The key for a token of `alg` named `kid`: from the cached keys, or, when they lack it
    /// (the provider rotated its keys), from its keys fetched again.
    pub async fn key_for(&self, alg: Algorithm, kid: Option<&str>) -> Result<Option<Jwk>, ProviderError> {
        let (discovery, keys) = self.cached().await?;
        if let Some(key) = super::id_token::key_for(&keys, alg, kid) {
            return Ok(Some(key.clone()));
        }
        let mut cache = self.cache.lock().await;
        let Some(cached) = cache.as_mut() else { return Ok(None) };
        if cached.refetched_for_unknown_kid.is_none_or(|at| at.elapsed() >= REFETCH_KEYS_AFTER) {
            cached.refetched_for_unknown_kid = Some(Instant::now());
            let fresh: JwkSet = self.get_json(&discovery.jwks_uri).await?;
            cached.keys = Arc::new(fresh);
        }
        Ok(super::id_token::key_for(&cached.keys, alg, kid).cloned())
    }

    /// Where the browser signs in: authorization code with PKCE S256, `state` and `nonce`.
    pub async fn authorize_url(&self, state: &str, nonce: &str, challenge: &str) -> Result<String, ProviderError> {
        let discovery = self.discovery().await?;
        let mut url = Url::parse(&discovery.authorization_endpoint)
            .map_err(|e| ProviderError::Refused(format!("its authorization endpoint is not a URL: {e}")))?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("redirect_uri", &self.settings.redirect_uri)
            .append_pair("scope", &self.settings.scopes.join(" "))
            .append_pair("state", state)
            .append_pair("nonce", nonce)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256");
        Ok(url.into())
    }

    /// Trades an authorization code (and the attempt's PKCE verifier) for tokens.
    pub async fn exchange_code(&self, code: &str, verifier: &str) -> Result<Tokens, ProviderError> {
        let discovery = self.discovery().await?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.settings.redirect_uri.as_str()),
            ("code_verifier", verifier),
        ];
        self.post_form(&discovery.token_endpoint, &form).await
    }

    /// The userinfo claims for an access token (`None` where the provider has no endpoint).
    pub async fn userinfo(&self, access_token: &str) -> Result<Option<Value>, ProviderError> {
        let discovery = self.discovery().await?;
        let Some(endpoint) = discovery.userinfo_endpoint.as_deref() else { return Ok(None) };
        let answer = self.http.get(endpoint).bearer_auth(access_token).send().await.map_err(unreachable)?;
        Ok(Some(read_json(answer).await?))
    }

    /// Starts a device authorization (`None` where the provider offers none).
    pub async fn start_device(&self) -> Result<Option<DeviceAuthorization>, ProviderError> {
        let discovery = self.discovery().await?;
        let Some(endpoint) = discovery.device_authorization_endpoint.as_deref() else { return Ok(None) };
        let scope = self.settings.scopes.join(" ");
        Ok(Some(self.post_form(endpoint, &[("scope", scope.as_str())]).await?))
    }

    /// Asks whether the person finished a device authorization: `Ok(None)` while pending.
    pub async fn poll_device(&self, device_code: &str) -> Result<Option<Tokens>, ProviderError> {
        let discovery = self.discovery().await?;
        let form = [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", device_code)];
        match self.post_form::<Tokens>(&discovery.token_endpoint, &form).await {
            Ok(tokens) => Ok(Some(tokens)),
            Err(ProviderError::Refused(why))
                if why.starts_with("authorization_pending") || why.starts_with("slow_down") =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The provider's end-session URL for a session signed in with `id_token`.
    pub async fn end_session_url(&self, id_token: &str) -> Option<String> {
        let discovery = self.discovery().await.ok()?;
        let mut url = Url::parse(discovery.end_session_endpoint.as_deref()?).ok()?;
        url.query_pairs_mut()
            .append_pair("id_token_hint", id_token)
            .append_pair("post_logout_redirect_uri", &format!("{}/login", self.settings.public_url))
            .append_pair("client_id", &self.settings.client_id);
        Some(url.into())
    }

    async fn get_json<T: for<'de> Deserialize<'de>>(&self, url: &str) -> Result<T, ProviderError> {
        let answer = self.http.get(url).send().await.map_err(unreachable)?;
        read_json(answer).await
    }

    /// A form POST authenticated as this client (`client_secret_basic`; a public client sends
    /// its id in the form).
    async fn post_form<T: for<'de> Deserialize<'de>>(
        &self,
        url: &str,
        form: &[(&str, &str)],
    ) -> Result<T, ProviderError> {
        let mut request = self.http.post(url);
        let mut body: Vec<(&str, &str)> = form.to_vec();
        match &self.settings.client_secret {
            Some(secret) => {
                let id = form_encode(&self.settings.client_id);
                request = request.basic_auth(id, Some(form_encode(secret.expose_secret())));
            }
            None => body.push(("client_id", self.settings.client_id.as_str())),
        }
        let answer = request.form(&body).send().await.map_err(unreachable)?;
        read_json(answer).await
    }
}

/// RFC 6749 §2.3.1: the client id and secret are form-encoded before basic authentication.
fn form_encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

fn unreachable(e: reqwest::Error) -> ProviderError {
    ProviderError::Unreachable(e.without_url().to_string())
}

/// A JSON answer, or the provider's `error` (and description) as a refusal.
async fn read_json<T: for<'de> Deserialize<'de>>(answer: reqwest::Response) -> Result<T, ProviderError> {
    let status = answer.status();
    let bytes = answer.bytes().await.map_err(unreachable)?;
    if bytes.len() > MAX_ANSWER_BYTES {
        return Err(ProviderError::Refused(format!("an answer of {} bytes is too large", bytes.len())));
    }
    if !status.is_success() {
        let json: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        let error = json.get("error").and_then(Value::as_str).unwrap_or("error");
        let description = json.get("error_description").and_then(Value::as_str).unwrap_or_default();
        let text: String = format!("{error} (HTTP {}) {description}", status.as_u16()).chars().take(300).collect();
        return Err(ProviderError::Refused(text.trim_end().to_owned()));
    }
    serde_json::from_slice(&bytes).map_err(|e| ProviderError::Refused(format!("an answer that does not read: {e}")))
}
