//! The one way Trellis builds an outbound HTTP client (`http` nodes, alert deliveries, the OTLP
//! exporter, and the tests' and bench's clients), so every client trusts the same roots on the
//! same crypto; and the outbound policy user-directed requests are held to (`guard.rs`). It
//! stands on nothing of Trellis's: the engine, triggers and alerts all stand on it.
//!
//! reqwest 0.13's `rustls` feature brings aws-lc-rs (a C library) and the platform verifier
//! (the OS certificate store). Trellis keeps what 0.12's `rustls-tls-webpki-roots` gave it:
//! rustls on ring, which sqlx already uses, and the Mozilla roots compiled in, so a server in
//! a bare container reaches HTTPS endpoints without a CA bundle. With reqwest's
//! `rustls-no-provider` feature a client built without this configuration panics.

mod guard;

pub use guard::{guarded_client, OutboundPolicy};
use std::sync::{Arc, LazyLock};

/// TLS for every outbound client: ring, TLS 1.2 and 1.3, the webpki (Mozilla) roots, and
/// HTTP/1.1 only (reqwest's `http2` feature is off).
static TLS: LazyLock<rustls::ClientConfig> = LazyLock::new(|| {
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    tls
});

/// Trellis's TLS without HTTP's protocol negotiation, for the broker clients (`mqtts://`).
pub fn broker_tls() -> rustls::ClientConfig {
    let mut tls = TLS.clone();
    tls.alpn_protocols.clear();
    tls
}

/// A client builder with Trellis's TLS; add timeouts, resolvers and the like, then `build()`.
pub fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured(TLS.clone())
}

#[cfg(test)]
mod tests {
    /// reqwest takes a preconfigured TLS config only from the rustls version it links: a
    /// mismatch would fail every client at build time, so build one here.
    #[test]
    fn a_client_builds_with_the_preconfigured_tls() {
        super::builder().build().expect("reqwest accepts this rustls ClientConfig");
    }
}
