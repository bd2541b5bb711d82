//! A shell example that signs and sends one test delivery to a webhook trigger, the way
//! Standard Webhooks senders do: HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed by the
//! base64 part of the `whsec_` secret. Its body is an input the workflow's input schema
//! accepts, so the test delivery starts a run instead of being refused.

use crate::schema_example;
use serde_json::{json, Value};

/// The commands, ready to paste: `openssl`, `base64`, `xxd` and `curl` are all it needs.
pub fn signed_curl(url: &str, secret: &str, body: &Value) -> String {
    let body = shell_quoted(&body.to_string());
    format!(
        "SECRET='{secret}'\n\
         ID=test-$(date +%s); TS=$(date +%s); BODY={body}\n\
         KEY=$(printf '%s' \"${{SECRET#whsec_}}\" | base64 -d | xxd -p -c 256)\n\
         SIG=$(printf '%s' \"$ID.$TS.$BODY\" | openssl dgst -sha256 -mac HMAC -macopt hexkey:$KEY -binary | base64)\n\
         curl -X POST '{url}' -H \"webhook-id: $ID\" -H \"webhook-timestamp: $TS\" \\\n  \
         -H \"webhook-signature: v1,$SIG\" -H 'content-type: application/json' -d \"$BODY\""
    )
}

/// A body for a test delivery: an example of what `schema` (the published version's input
/// schema) describes, or a small object when there is no schema the Run form can draw.
pub fn example_body(schema: Option<&Value>) -> Value {
    schema.and_then(schema_example::example).unwrap_or_else(|| json!({"hello": "trellis"}))
}

/// `text` as one single-quoted shell word (`'` written as `'\''`).
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_the_schema_s_example_quoted_for_the_shell() {
        // Which value each field gets is `schema_example`'s to test; here: that it is used, and
        // that a quote in it survives the shell (`'it'\''s'`).
        let schema = json!({"type": "object", "properties": {"note": {"type": "string", "default": "it's"}}});
        let body = example_body(Some(&schema));
        assert_eq!(Some(&body), schema_example::example(&schema).as_ref());
        assert_eq!(example_body(None), json!({"hello": "trellis"}));
        let text = signed_curl("http://h/hooks/a", "whsec_c2VjcmV0", &body);
        assert!(text.contains(r#"BODY='{"note":"it'\''s"}'"#), "{text}");
    }

    #[test]
    fn the_example_names_the_url_the_secret_and_the_three_headers() {
        let text = signed_curl("http://127.0.0.1:8080/hooks/abc", "whsec_c2VjcmV0", &example_body(None));
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
