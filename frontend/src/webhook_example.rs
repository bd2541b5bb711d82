//! A shell example that signs and sends one test delivery to a webhook trigger, the way
//! Standard Webhooks senders do: HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed by the
//! base64 part of the `whsec_` secret.

/// The commands, ready to paste: `openssl`, `base64`, `xxd` and `curl` are all it needs.
pub fn signed_curl(url: &str, secret: &str) -> String {
    format!(
        "SECRET='{secret}'\n\
         ID=test-$(date +%s); TS=$(date +%s); BODY='{{\"hello\":\"trellis\"}}'\n\
         KEY=$(printf '%s' \"${{SECRET#whsec_}}\" | base64 -d | xxd -p -c 256)\n\
         SIG=$(printf '%s' \"$ID.$TS.$BODY\" | openssl dgst -sha256 -mac HMAC -macopt hexkey:$KEY -binary | base64)\n\
         curl -X POST '{url}' -H \"webhook-id: $ID\" -H \"webhook-timestamp: $TS\" \\\n  \
         -H \"webhook-signature: v1,$SIG\" -H 'content-type: application/json' -d \"$BODY\""
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_names_the_url_the_secret_and_the_three_headers() {
        let text = signed_curl("http://127.0.0.1:8080/hooks/abc", "whsec_c2VjcmV0");
        assert!(text.starts_with("SECRET='whsec_c2VjcmV0'\n"), "{text}");
        for part in [
            "webhook-id: $ID",
            "webhook-timestamp: $TS",
            "webhook-signature: v1,$SIG",
            "'http://127.0.0.1:8080/hooks/abc'",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        assert!(text.contains("\"$ID.$TS.$BODY\""));
    }
}
