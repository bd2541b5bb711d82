//! JSON that storage cannot keep or give back.
//!
//! U+0000: Postgres refuses it in `jsonb` and `text` while SQLite keeps it, so Trellis keeps
//! it out of storage on both. Client input containing it is refused (422); what nodes produce
//! (an HTTP body, say) has it replaced, since the node cannot be "fixed".
//!
//! Nesting: a value nested too deep is stored but can never be read back
//! (`trellis_model::nesting`); a client's is refused here (422, naming where), a node's output
//! fails the node (`outputs.rs`).

use super::error::EngineError;
use serde_json::Value;
use trellis_model::excerpt::excerpt;
use trellis_model::nesting::{too_deep, MAX_JSON_DEPTH};
use trellis_model::Issue;

/// The most of a JSON path an error quotes (a path names the sender's keys).
pub const MAX_PATH_SHOWN: usize = 200;

/// Refuses `value` (`what`: "the input", "the payload") nested deeper than `limit`, naming the
/// JSON Pointer where it passes it.
pub fn refuse_deep(value: &Value, limit: usize, what: &str) -> Result<(), EngineError> {
    let Some(path) = too_deep(value, limit) else { return Ok(()) };
    let path = excerpt(&path, MAX_PATH_SHOWN).into_owned();
    let detail = format!("{what} nests deeper than {limit} levels (at `{path}`); {}", depth_rule());
    Err(EngineError::InputRejected { detail: detail.clone(), errors: vec![Issue::new("too_deep", detail).path(path)] })
}

/// Why a value's nesting is limited, for errors.
pub fn depth_rule() -> String {
    format!("Trellis stores JSON nested at most {MAX_JSON_DEPTH} levels deep (arrays and objects within each other)")
}

pub fn contains_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(contains_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || contains_nul(v)),
        _ => false,
    }
}

/// Replaces U+0000 with U+FFFD everywhere in `value`.
pub fn replace_nul(value: &mut Value) {
    match value {
        Value::String(s) if s.contains('\0') => *s = replace_nul_str(s),
        Value::Array(items) => items.iter_mut().for_each(replace_nul),
        Value::Object(map) if map.keys().any(|k| k.contains('\0')) => {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                replace_nul(&mut v);
                map.insert(replace_nul_str(&k), v);
            }
        }
        Value::Object(map) => map.values_mut().for_each(replace_nul),
        _ => {}
    }
}

pub fn replace_nul_str(s: &str) -> String {
    s.replace('\0', "\u{FFFD}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_is_found_and_replaced_in_keys_and_values() {
        let mut v = json!({"a\u{0}": ["x\u{0}y", 1], "b": "fine"});
        assert!(contains_nul(&v));
        replace_nul(&mut v);
        assert!(!contains_nul(&v));
        assert_eq!(v, json!({"a\u{FFFD}": ["x\u{FFFD}y", 1], "b": "fine"}));
    }

    #[test]
    fn a_value_nested_too_deep_is_refused_naming_where() {
        let deep = json!({"a": [{"b": {}}]});
        assert!(refuse_deep(&deep, 4, "the input").is_ok());
        let Err(EngineError::InputRejected { detail, errors }) = refuse_deep(&deep, 3, "the input") else {
            panic!("taken")
        };
        assert!(detail.starts_with("the input nests deeper than 3 levels (at `/a/0/b`)"), "{detail}");
        assert_eq!(errors[0].path.as_deref(), Some("/a/0/b"));
    }
}
