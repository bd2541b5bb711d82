//! The outbound policy every request Trellis sends on a user's behalf is held to (`http` nodes,
//! alert deliveries): private, loopback and link-local targets are refused unless listed in
//! `TRELLIS_HTTP_ALLOW`. The policy is checked on the addresses the connection will actually use
//! (a resolver wrapper), so DNS cannot rebind around it.

use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub struct OutboundPolicy {
    pub allow: Vec<IpNet>,
}

impl OutboundPolicy {
    /// Parses `TRELLIS_HTTP_ALLOW`: comma-separated CIDRs (or single addresses).
    pub fn parse(list: &str) -> Result<Self, String> {
        let allow = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| format!("`{s}` is not a CIDR"))
            })
            .collect::<Result<_, _>>()?;
        Ok(OutboundPolicy { allow })
    }

    pub fn permits(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.allow.iter().any(|net| net.contains(&ip))
    }

    /// Whether a request to `url` may be made now: an `http(s)` URL whose literal address, or
    /// at least one of whose resolved addresses, the policy permits (alert receivers are
    /// checked with it when saved; the client of [`guarded_client`] checks every connection).
    pub async fn check_url(&self, url: &str) -> Result<(), String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL ({e})"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("unsupported scheme `{}`; use http or https", parsed.scheme()));
        }
        let refused = |ip: IpAddr| format!("{ip} is outside the outbound policy; allow it with TRELLIS_HTTP_ALLOW");
        match parsed.host() {
            Some(url::Host::Ipv4(ip)) if !self.permits(IpAddr::V4(ip)) => Err(refused(IpAddr::V4(ip))),
            Some(url::Host::Ipv6(ip)) if !self.permits(IpAddr::V6(ip)) => Err(refused(IpAddr::V6(ip))),
            Some(url::Host::Domain(name)) => {
                let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name, 0))
                    .await
                    .map_err(|_| format!("`{name}` does not resolve"))?
                    .collect();
                if addrs.iter().any(|a| self.permits(a.ip())) {
                    Ok(())
                } else {
                    Err(format!("`{name}` resolves only to addresses outside the outbound policy (TRELLIS_HTTP_ALLOW)"))
                }
            }
            Some(_) => Ok(()),
            None => Err("the URL names no host".into()),
        }
    }
}

/// A client held to `policy` on every connection (resolved addresses filtered; no proxy, no
/// redirects): what `http` nodes and alert deliveries send with. Literal addresses never reach
/// the resolver: check them first ([`OutboundPolicy::check_url`]).
pub fn guarded_client(policy: Arc<OutboundPolicy>) -> reqwest::Client {
    super::builder()
        .dns_resolver(Arc::new(PolicyResolver(policy)))
        .redirect(reqwest::redirect::Policy::none())
        // A proxy would resolve and reach the target itself, around the policy.
        .no_proxy()
        .user_agent(concat!("trellis/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("an HTTP client")
}

fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            let special = v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64) // carrier-grade NAT
                || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking
                || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
                || o[0] >= 240; // reserved
            !special
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            let embeds_v4 = (s[0] == 0x64 && s[1] == 0xff9b) // NAT64
                || s[0] == 0x2002 // 6to4
                || s[..6].iter().all(|&x| x == 0); // IPv4-compatible
            let special = v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local
                || (s[0] & 0xffc0) == 0xfe80 // link-local
                || (s[0] & 0xffc0) == 0xfec0; // site-local
            !special && !embeds_v4
        }
    }
}

/// Resolves names, then drops the addresses the policy refuses.
struct PolicyResolver(Arc<OutboundPolicy>);

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = addrs.into_iter().filter(|a| policy.permits(a.ip())).collect();
            if allowed.is_empty() {
                return Err(format!(
                    "`{host}` resolves only to addresses outside the outbound policy (TRELLIS_HTTP_ALLOW)"
                )
                .into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_targets_are_refused_unless_allowed() {
        let none = OutboundPolicy::default();
        let refused = [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.1.1",
            "169.254.169.254",
            "::1",
            "fd00::1",
            "100.64.0.1",
            "0.0.0.0",
            "198.18.0.1",
            "240.0.0.1",
            "192.0.0.8",
            "64:ff9b::a00:1",
            "::a00:1",
            "2002:a00:1::",
            "fec0::1",
            "::ffff:10.0.0.1",
        ];
        for ip in refused {
            assert!(!none.permits(ip.parse().unwrap()), "{ip}");
        }
        assert!(none.permits("93.184.216.34".parse().unwrap()));
        assert!(none.permits("2606:4700::1111".parse().unwrap()));
        let loopback = OutboundPolicy::parse("127.0.0.0/8, ::1").unwrap();
        assert!(loopback.permits("127.0.0.1".parse().unwrap()) && loopback.permits("::1".parse().unwrap()));
        assert!(!loopback.permits("10.0.0.1".parse().unwrap()));
        assert!(OutboundPolicy::parse("not-a-cidr").is_err());
    }
}
