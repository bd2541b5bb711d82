//! A message as every broker kind hands it over, and what the trigger makes of it before a
//! start: its default input, the context of the `input` and `dedupe` expressions, and its
//! dedupe key.

use serde_json::{json, Map, Value};

/// One message taken from a broker, not yet acknowledged.
#[derive(Debug, Clone)]
pub struct Message {
    pub body: Vec<u8>,
    /// Where it came from: the subject, queue or topic.
    pub source: String,
    pub headers: Map<String, Value>,
    /// The broker's own id: JetStream's `Nats-Msg-Id` header or stream sequence, AMQP's
    /// `message_id` property. MQTT messages have none.
    pub message_id: Option<String>,
}

/// Why a message starts nothing, and is acknowledged and logged `rejected`.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal(pub String);

impl Message {
    /// The message as `message` in the trigger's expressions, and as the instance's input
    /// when the trigger has no `input` expression: `{body, <source_field>, headers,
    /// message_id}`, `body` parsed as JSON when it is JSON, else the text.
    pub fn view(&self, source_field: &str, max_bytes: usize) -> Result<Value, Refusal> {
        if self.body.len() > max_bytes {
            return Err(Refusal(format!(
                "the message is {} bytes; a start's input may be at most {max_bytes} bytes",
                self.body.len()
            )));
        }
        let text = std::str::from_utf8(&self.body)
            .map_err(|e| Refusal(format!("the message body is not UTF-8 text ({e}); send JSON or text")))?;
        let body = match serde_json::from_str::<Value>(text) {
            Ok(json) => json,
            Err(_) if text.trim().is_empty() => Value::Null,
            Err(_) => Value::String(text.to_owned()),
        };
        let mut view = json!({"body": body, "headers": self.headers, "message_id": self.message_id});
        view[source_field] = Value::String(self.source.clone());
        Ok(view)
    }
}

/// The longest key kept as it is; a longer one is kept as its SHA-256 (a key is part of an
/// index, whose entries the databases bound).
const MAX_KEY_BYTES: usize = 200;

/// A dedupe expression's value as a key: a string as it is, another scalar as its JSON text.
/// `null`, an object, a list or an empty string names no message, so it is refused.
pub fn dedupe_key(value: &Value) -> Result<String, Refusal> {
    let key = match value {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(_) | Value::Bool(_) => value.to_string(),
        other => {
            return Err(Refusal(format!(
                "the trigger's `dedupe` gave {}; it must give a non-empty string or a number",
                trellis_model::excerpt::excerpt(&other.to_string(), 100)
            )))
        }
    };
    stored_key(&key).ok_or_else(|| Refusal("the trigger's `dedupe` gave a text with control characters".into()))
}

/// A broker's own message id as a key: `None` when it has none (or an empty one), or one
/// with control characters (it could not be stored as given, so it names nothing).
pub fn id_key(id: Option<&str>) -> Option<String> {
    id.filter(|id| !id.is_empty()).and_then(stored_key)
}

/// `key` as stored: as it is up to `MAX_KEY_BYTES`, else `sha256:<hex>`; `None` if it holds
/// a control character (NUL included, which Postgres refuses in text).
fn stored_key(key: &str) -> Option<String> {
    if key.chars().any(char::is_control) {
        return None;
    }
    Some(match key.len() > MAX_KEY_BYTES {
        true => format!("sha256:{}", crate::digest::sha256_hex(key.as_bytes())),
        false => key.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(body: &[u8]) -> Message {
        Message { body: body.to_vec(), source: "orders".into(), headers: Map::new(), message_id: Some("7".into()) }
    }

    #[test]
    fn a_json_body_is_parsed_and_text_is_kept_as_text() {
        let view = message(br#"{"id": 1}"#).view("subject", 1024).unwrap();
        assert_eq!(view, json!({"body": {"id": 1}, "subject": "orders", "headers": {}, "message_id": "7"}));
        assert_eq!(message(b"hello").view("queue", 1024).unwrap()["body"], json!("hello"));
        assert_eq!(message(b"").view("topic", 1024).unwrap()["body"], Value::Null);
    }

    #[test]
    fn a_body_that_is_not_utf8_or_too_big_is_refused_saying_why() {
        let Refusal(why) = message(&[0xff, 0xfe]).view("subject", 1024).unwrap_err();
        assert!(why.contains("not UTF-8"), "{why}");
        let Refusal(why) = message(&[b'a'; 2048]).view("subject", 1024).unwrap_err();
        assert!(why.contains("2048 bytes") && why.contains("1024"), "{why}");
    }

    #[test]
    fn dedupe_keys_are_scalars() {
        assert_eq!(dedupe_key(&json!("a-1")), Ok("a-1".into()));
        assert_eq!(dedupe_key(&json!(42)), Ok("42".into()));
        assert!(dedupe_key(&Value::Null).is_err());
        assert!(dedupe_key(&json!({"a": 1})).is_err());
        assert!(dedupe_key(&json!("")).is_err());
        assert!(dedupe_key(&json!("a\u{0}b")).is_err());
        let long = dedupe_key(&json!("k".repeat(5_000))).unwrap();
        assert!(long.starts_with("sha256:") && long.len() == 71, "{long}");
    }

    #[test]
    fn an_empty_or_unstorable_broker_id_names_nothing() {
        assert_eq!(id_key(Some("")), None);
        assert_eq!(id_key(Some("a\nb")), None);
        assert_eq!(id_key(Some("m-1")), Some("m-1".into()));
        assert_eq!(id_key(None), None);
    }
}
