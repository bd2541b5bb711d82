//! The command line's sign-in through the browser when the provider offers no device flow
//! (RFC 8252 §7.3, a loopback redirect). The command line listens on `127.0.0.1:PORT` and
//! opens `/auth/oidc/login?cli_port=PORT&cli_challenge=C`, `C` being the PKCE S256 challenge
//! of a verifier only it holds. The browser signs in as usual; the callback, instead of a
//! session cookie, records a one-time code for the user it admitted and shows a page whose
//! link, once the person confirms, takes it to `http://127.0.0.1:PORT/callback?code=…`. The
//! command line trades that code with its verifier for a session, once. The code is worth
//! nothing without the verifier of the attempt's beginner — which is why a sign-in link someone
//! else began stops at the confirmation rather than sending the code on by itself.

use super::{challenge_of, random_text};
use crate::store::OidcHandoff;
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// How long the command line has to trade its code after the browser's redirect.
const HANDOFF_SECS: i64 = 120;
/// An S256 challenge is base64url of 32 bytes.
const CHALLENGE_LEN: usize = 43;

/// Where a command-line attempt's result goes, checked before the attempt is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopbackReturn {
    pub port: u16,
    pub challenge: String,
}

impl LoopbackReturn {
    /// Both or neither of `cli_port` and `cli_challenge`; the port only ever on 127.0.0.1,
    /// so no address of the caller's choosing is ever redirected to.
    pub fn from_query(port: Option<u16>, challenge: Option<&str>) -> Result<Option<LoopbackReturn>, String> {
        match (port, challenge) {
            (None, None) => Ok(None),
            (Some(port), Some(challenge)) if port > 0 && is_s256_challenge(challenge) => {
                Ok(Some(LoopbackReturn { port, challenge: challenge.to_owned() }))
            }
            _ => Err(format!(
                "a command-line sign-in needs both `cli_port` (1–65535) and `cli_challenge` (a PKCE S256 \
                 challenge: {CHALLENGE_LEN} base64url characters)"
            )),
        }
    }

    /// From a recorded attempt's columns.
    pub fn from_attempt(port: Option<i32>, challenge: Option<&str>) -> Option<LoopbackReturn> {
        let port = u16::try_from(port?).ok()?;
        Some(LoopbackReturn { port, challenge: challenge?.to_owned() })
    }

    /// Where the browser goes with the one-time code.
    pub fn with_code(&self, code: &str) -> String {
        format!("http://127.0.0.1:{}/callback?code={code}", self.port)
    }

    /// Where the browser goes with a refusal's code, for the command line to say why.
    pub fn with_refusal(&self, code: &str) -> String {
        format!("http://127.0.0.1:{}/callback?error={code}", self.port)
    }
}

fn is_s256_challenge(text: &str) -> bool {
    text.len() == CHALLENGE_LEN && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A one-time code for `user`, and the row that remembers it (hashed).
pub fn new_handoff(back: &LoopbackReturn, user: Uuid, id_token: &str, now: DateTime<Utc>) -> (String, OidcHandoff) {
    let code = random_text();
    let handoff = OidcHandoff {
        code_hash: code_hash(&code),
        challenge: back.challenge.clone(),
        user_id: user,
        id_token: id_token.to_owned(),
        expires_at: now + chrono::Duration::seconds(HANDOFF_SECS),
    };
    (code, handoff)
}

/// SHA-256 of the code, base64url (the same digest as a PKCE challenge).
pub fn code_hash(code: &str) -> String {
    challenge_of(code)
}

/// Whether `verifier` is the one whose challenge began the attempt.
pub fn verifier_fits(verifier: &str, handoff: &OidcHandoff) -> bool {
    (43..=128).contains(&verifier.len()) && challenge_of(verifier) == handoff.challenge
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn a_loopback_return_needs_both_parts_and_a_real_challenge() {
        assert_eq!(LoopbackReturn::from_query(None, None), Ok(None));
        let back = LoopbackReturn::from_query(Some(53_682), Some(CHALLENGE)).unwrap().unwrap();
        assert_eq!(back.with_code("abc"), "http://127.0.0.1:53682/callback?code=abc");
        for (port, challenge) in
            [(Some(53_682), None), (None, Some(CHALLENGE)), (Some(0), Some(CHALLENGE)), (Some(80), Some("short"))]
        {
            assert!(LoopbackReturn::from_query(port, challenge).is_err(), "{port:?} {challenge:?}");
        }
        assert!(LoopbackReturn::from_query(Some(80), Some(&format!("{}%", &CHALLENGE[1..]))).is_err());
    }

    #[test]
    fn only_the_verifier_of_the_challenge_trades_the_code() {
        let back = LoopbackReturn { port: 9, challenge: CHALLENGE.into() };
        let (code, handoff) = new_handoff(&back, Uuid::nil(), "id", Utc::now());
        assert_eq!(handoff.code_hash, code_hash(&code));
        assert_ne!(handoff.code_hash, code, "the code is kept hashed");
        assert!(verifier_fits("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", &handoff));
        assert!(!verifier_fits("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX", &handoff));
        assert!(!verifier_fits(CHALLENGE, &handoff));
    }
}
