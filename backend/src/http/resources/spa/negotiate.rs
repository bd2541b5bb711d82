//! Which form of a file to send (`Accept-Encoding`) and whether the client's copy is
//! current (`If-None-Match`).

use super::assets::{Asset, Encoding};

/// Brotli when the client takes it and the file has that form, else gzip, else the file as
/// it is. A higher `q` wins; on a tie brotli does (it is smaller).
pub fn choose(accept_encoding: Option<&str>, asset: &Asset) -> Encoding {
    let Some(header) = accept_encoding else { return Encoding::Identity };
    let weight = |encoding: Encoding| {
        let token = encoding.token().unwrap_or("identity");
        if asset.has(encoding) {
            quality(header, token).filter(|q| *q > 0.0)
        } else {
            None
        }
    };
    match (weight(Encoding::Brotli), weight(Encoding::Gzip)) {
        (Some(br), Some(gz)) if gz > br => Encoding::Gzip,
        (Some(_), _) => Encoding::Brotli,
        (None, Some(_)) => Encoding::Gzip,
        (None, None) => Encoding::Identity,
    }
}

/// The `q` the header gives `coding` (1 when unstated), or the wildcard's, or none.
fn quality(header: &str, coding: &str) -> Option<f32> {
    let mut wildcard = None;
    for item in header.split(',') {
        let mut parts = item.split(';');
        let token = parts.next().unwrap_or_default().trim();
        let q = parts
            .filter_map(|p| p.trim().split_once('='))
            .find(|(key, _)| key.trim().eq_ignore_ascii_case("q"))
            .map_or(1.0, |(_, value)| value.trim().parse::<f32>().unwrap_or(0.0));
        if token.eq_ignore_ascii_case(coding) {
            return Some(q);
        }
        if token == "*" {
            wildcard = Some(q);
        }
    }
    wildcard
}

/// True when `If-None-Match` names `etag` (compared weakly, as RFC 9110 asks) or is `*`.
pub fn still_current(if_none_match: &str, etag: &str) -> bool {
    if if_none_match.trim() == "*" {
        return true;
    }
    if_none_match.split(',').map(str::trim).any(|tag| tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quality_values_and_the_wildcard_are_honoured() {
        assert_eq!(quality("gzip, deflate, br", "br"), Some(1.0));
        assert_eq!(quality("gzip;q=0.8, br;q=0.5", "br"), Some(0.5));
        assert_eq!(quality("BR; Q=0.2", "br"), Some(0.2));
        assert_eq!(quality("br;q=0, *", "br"), Some(0.0), "an explicit refusal beats the wildcard");
        assert_eq!(quality("*;q=0.3", "gzip"), Some(0.3));
        assert_eq!(quality("identity", "gzip"), None);
        assert_eq!(quality("gzip;q=nonsense", "gzip"), Some(0.0));
    }

    #[test]
    fn any_listed_tag_weak_or_strong_is_a_match() {
        assert!(still_current("\"abc\"", "\"abc\""));
        assert!(still_current("\"x\", W/\"abc\"", "\"abc\""));
        assert!(still_current(" * ", "\"abc\""));
        assert!(!still_current("\"abc.br\"", "\"abc\""));
        assert!(!still_current("", "\"abc\""));
    }
}
