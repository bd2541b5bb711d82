//! Webhook signatures, as triggers check them. Standard Webhooks (secrets and signing in
//! `crate::standard_webhooks`, which alerts sign with too): HMAC-SHA256 over `{id}.{timestamp}.{body}` keyed
//! with the base64 part of a `whsec_` secret, sent as `v1,<base64>` (several may be listed,
//! space-separated), with the timestamp within ±5 minutes. GitHub: HMAC-SHA256 of the body
//! keyed with the secret's text, sent as `X-Hub-Signature-256: sha256=<hex>`, with the
//! (unsigned) `X-GitHub-Delivery` id required; since neither the id nor a time is signed,
//! such deliveries are also deduplicated by a digest of the body ([`body_digest`]).
//!
//! Comparisons go through `Mac::verify_slice`, which is constant-time. Secrets never reach
//! logs or error messages.

use super::spec::Preset;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use sha2::Sha256;

use crate::standard_webhooks::{content_mac, SECRET_PREFIX};

/// How far a `webhook-timestamp` may be from the server's clock.
pub const TOLERANCE_SECS: i64 = 5 * 60;
/// The longest delivery id accepted (it is stored and compared).
pub const MAX_DELIVERY_ID_LEN: usize = 200;

type HmacSha256 = Hmac<Sha256>;

/// Checks a delivery against each of `secrets` (the current one and, during a rotation's
/// grace period, the previous one). Returns the delivery's id for deduplication, or why it
/// was refused, saying what the sender must fix.
pub fn verify(
    preset: Preset,
    headers: &HeaderMap,
    body: &[u8],
    secrets: &[&str],
    now: DateTime<Utc>,
) -> Result<String, String> {
    match preset {
        Preset::Standard => verify_standard(headers, body, secrets, now),
        Preset::Github => verify_github(headers, body, secrets),
    }
}

/// The SHA-256 (hex) of a body, for presets whose signature covers only the body (GitHub):
/// there, a replay under a new delivery id is recognised by this instead.
pub fn body_digest(preset: Preset, body: &[u8]) -> Option<String> {
    match preset {
        Preset::Standard => None,
        Preset::Github => Some(crate::digest::sha256_hex(body)),
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty())
}

fn delivery_id(value: &str, name: &str) -> Result<String, String> {
    if value.len() > MAX_DELIVERY_ID_LEN || value.chars().any(|c| c.is_control()) {
        return Err(format!("`{name}` must be at most {MAX_DELIVERY_ID_LEN} printable characters"));
    }
    Ok(value.to_owned())
}

fn verify_standard(headers: &HeaderMap, body: &[u8], secrets: &[&str], now: DateTime<Utc>) -> Result<String, String> {
    let missing = |name: &str| format!("missing `{name}` header; sign deliveries per Standard Webhooks");
    let id = delivery_id(header(headers, "webhook-id").ok_or_else(|| missing("webhook-id"))?, "webhook-id")?;
    let timestamp = header(headers, "webhook-timestamp").ok_or_else(|| missing("webhook-timestamp"))?;
    let signatures = header(headers, "webhook-signature").ok_or_else(|| missing("webhook-signature"))?;
    let seconds: i64 =
        timestamp.parse().map_err(|_| "`webhook-timestamp` must be whole seconds since the Unix epoch".to_owned())?;
    let skew = now.timestamp().saturating_sub(seconds);
    if skew.abs() > TOLERANCE_SECS {
        return Err(format!(
            "`webhook-timestamp` is {skew} s off the server's clock; sign with the current time (within ±{TOLERANCE_SECS} s)"
        ));
    }
    let candidates: Vec<Vec<u8>> = signatures
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter_map(|b64| STANDARD.decode(b64).ok())
        .collect();
    for key in secrets.iter().filter_map(|s| s.strip_prefix(SECRET_PREFIX)).filter_map(|b64| STANDARD.decode(b64).ok())
    {
        let mac = content_mac(&key, &id, timestamp, body);
        if candidates.iter().any(|sig| mac.clone().verify_slice(sig).is_ok()) {
            return Ok(id);
        }
    }
    Err("no `v1` signature in `webhook-signature` matches; sign `{webhook-id}.{webhook-timestamp}.{body}` \
         with HMAC-SHA256 keyed by the base64-decoded part of the secret after `whsec_`"
        .to_owned())
}

fn verify_github(headers: &HeaderMap, body: &[u8], secrets: &[&str]) -> Result<String, String> {
    let signature = header(headers, "x-hub-signature-256")
        .ok_or_else(|| "missing `X-Hub-Signature-256` header; set the webhook's secret in GitHub".to_owned())?;
    let hex = signature
        .strip_prefix("sha256=")
        .ok_or_else(|| "`X-Hub-Signature-256` must look like `sha256=<hex>`".to_owned())?;
    let expected = decode_hex(hex).ok_or_else(|| "`X-Hub-Signature-256` must look like `sha256=<hex>`".to_owned())?;
    for secret in secrets {
        let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
        mac.update(body);
        if mac.verify_slice(&expected).is_ok() {
            // Checked after the signature, so an unsigned probe learns nothing more.
            let id = header(headers, "x-github-delivery")
                .ok_or_else(|| "missing `X-GitHub-Delivery` header; GitHub sends one with every delivery".to_owned())?;
            return delivery_id(id, "X-GitHub-Delivery");
        }
    }
    Err("`X-Hub-Signature-256` does not match; the webhook's secret in GitHub must be this trigger's secret, as shown"
        .to_owned())
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let nibble = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    hex.as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [high, low] => Some(nibble(*high)? << 4 | nibble(*low)?),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard_webhooks::{new_secret, sign};
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn a_signature_by_any_listed_secret_verifies_and_others_do_not() {
        let (old, new) = (new_secret(), new_secret());
        let now = Utc::now();
        let ts = now.timestamp();
        let body = br#"{"a":1}"#;
        let h = headers(&[
            ("webhook-id", "msg_1".into()),
            ("webhook-timestamp", ts.to_string()),
            ("webhook-signature", format!("v1,bm9wZQ== {}", sign(&old, "msg_1", ts, body))),
        ]);
        assert_eq!(verify(Preset::Standard, &h, body, &[&new, &old], now).unwrap(), "msg_1");
        assert!(verify(Preset::Standard, &h, body, &[&new], now).is_err());
        assert!(verify(Preset::Standard, &h, b"{}", &[&old], now).is_err(), "the body is signed");
        let skewed = now + chrono::Duration::seconds(TOLERANCE_SECS + 1);
        assert!(verify(Preset::Standard, &h, body, &[&old], skewed).unwrap_err().contains("off the server's clock"));
    }

    #[test]
    fn github_signs_the_body_with_the_secret_text() {
        let secret = new_secret();
        let body = b"{\"zen\":\"hi\"}";
        let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(body);
        let hex: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        let h = headers(&[("x-hub-signature-256", format!("sha256={hex}")), ("x-github-delivery", "d-1".into())]);
        assert_eq!(verify(Preset::Github, &h, body, &[&secret], Utc::now()).unwrap(), "d-1");
        let without_id = headers(&[("x-hub-signature-256", format!("sha256={hex}"))]);
        assert!(verify(Preset::Github, &without_id, body, &[&secret], Utc::now())
            .unwrap_err()
            .contains("X-GitHub-Delivery"));
        assert_eq!(
            body_digest(Preset::Github, b"abc").unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(body_digest(Preset::Standard, b"abc"), None);
        for bad in ["sha256=00", "sha256=0", "sha256=zz", "sha256=é"] {
            let h = headers(&[("x-hub-signature-256", bad.into())]);
            assert!(verify(Preset::Github, &h, body, &[&secret], Utc::now()).is_err(), "{bad}");
        }
        assert_eq!(decode_hex("00ff7A"), Some(vec![0, 255, 122]));
    }
}
