//! U+0000 in JSON: Postgres refuses it in `jsonb` and `text` while SQLite keeps it, so
//! Trellis keeps it out of storage on both. Client input containing it is refused (422);
//! what nodes produce (an HTTP body, say) has it replaced, since the node cannot be "fixed".

use serde_json::Value;

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
}
