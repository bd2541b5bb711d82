//! What sign-in checks before and after the password: the caller's address, the throttles
//! (429 with `Retry-After` while a username or address is locked), and the hashing gate
//! (503 with `Retry-After` when every hashing slot stays busy).

use crate::auth::password::HashError;
use crate::auth::throttle::SignInThrottle;
use crate::http::middleware::error::{problem, problem_response, ApiError};
use crate::http::AppState;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// The caller's address: the peer's, or behind a proxy (`TRELLIS_BEHIND_PROXY`) the
/// rightmost `X-Forwarded-For` entry, the one the proxy itself appended.
pub struct ClientAddr(pub Option<IpAddr>);

impl FromRequestParts<AppState> for ClientAddr {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
        if !state.serve.behind_proxy {
            return Ok(ClientAddr(peer));
        }
        let forwarded = parts
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|a| a.trim().parse::<IpAddr>().ok())
            .next_back();
        Ok(ClientAddr(forwarded.or(peer)))
    }
}

/// One sign-in's throttle keys.
pub struct Attempt {
    /// `None` for a name no account can have: it gets no key of its own.
    user: Option<String>,
    addr: Option<String>,
}

impl Attempt {
    pub fn new(username: &str, addr: Option<IpAddr>) -> Attempt {
        let user = crate::auth::check_username(username).is_ok().then(|| username.to_owned());
        Attempt { user, addr: addr.map(address_key) }
    }

    /// Whether the username is one an account could have (else: refuse without a hash).
    pub fn names_possible_account(&self) -> bool {
        self.user.is_some()
    }

    /// Refuses the attempt while its username or its address is locked.
    pub fn check(&self, throttle: &SignInThrottle) -> Result<(), Refusal> {
        let now = Instant::now();
        let user = self.user.as_deref().and_then(|u| throttle.users.locked(u, now));
        let addr = self.addr.as_deref().and_then(|a| throttle.addresses.locked(a, now));
        match (user, addr) {
            (None, None) => Ok(()),
            (Some(wait), _) => Err(Refusal::throttled("this account", wait)),
            (None, Some(wait)) => Err(Refusal::throttled("your address", wait)),
        }
    }

    pub fn failed(&self, throttle: &SignInThrottle) {
        let now = Instant::now();
        if let Some(user) = &self.user {
            if throttle.users.fail(user, now).is_some() {
                tracing::warn!(username = %user, "sign-in locked after repeated failures");
            }
        }
        if let Some(addr) = &self.addr {
            if throttle.addresses.fail(addr, now).is_some() {
                tracing::warn!(address = %addr, "sign-in locked for an address after repeated failures");
            }
        }
    }

    /// The account's count starts again; the address's does not (one valid account must
    /// not let its owner keep guessing others' passwords).
    pub fn succeeded(&self, throttle: &SignInThrottle) {
        if let Some(user) = &self.user {
            throttle.users.clear(user);
        }
    }
}

/// The throttle key of an address: IPv4 as is, IPv6 by its /64, the block one subscriber
/// usually holds whole (one caller could otherwise rotate through 2^64 keys).
fn address_key(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

/// Why a sign-in was refused.
pub enum Refusal {
    Api(ApiError),
    /// Come back after `retry_after` (429 or 503).
    Later {
        status: StatusCode,
        detail: String,
        retry_after: Duration,
    },
}

impl Refusal {
    fn throttled(whose: &str, wait: Duration) -> Refusal {
        let secs = whole_seconds(wait);
        let at = chrono::Utc::now() + chrono::Duration::seconds(secs as i64);
        Refusal::Later {
            status: StatusCode::TOO_MANY_REQUESTS,
            detail: format!(
                "too many failed sign-ins for {whose}; try again in {secs} s (after {})",
                at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
            retry_after: wait,
        }
    }
}

fn whole_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        Refusal::Api(e)
    }
}

impl From<crate::store::StoreError> for Refusal {
    fn from(e: crate::store::StoreError) -> Self {
        Refusal::Api(e.into())
    }
}

/// Every hashing slot stayed busy: a 503 (with `Retry-After`, as every 503 has).
const HASHING_BUSY: &str = "the server is checking too many passwords at once; try again in a second";

impl From<HashError> for Refusal {
    fn from(e: HashError) -> Self {
        Refusal::Api(e.into())
    }
}

impl From<HashError> for ApiError {
    fn from(e: HashError) -> Self {
        match e {
            HashError::Busy => {
                ApiError::Rejected { status: StatusCode::SERVICE_UNAVAILABLE, detail: HASHING_BUSY.into() }
            }
            HashError::Failed(why) => ApiError::Internal(anyhow::anyhow!(why)),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Api(e) => e.into_response(),
            Refusal::Later { status, detail, retry_after } => {
                let mut response = problem_response(&problem(status, detail, vec![]));
                let secs = whole_seconds(retry_after).max(1);
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
                response
            }
        }
    }
}
