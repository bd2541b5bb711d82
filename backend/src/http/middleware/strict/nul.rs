//! NUL (U+0000) in a body: Postgres stores it neither in `text` nor in `jsonb`, so it is refused
//! at the edge, naming where it is.

use super::BodyError;
use serde_json::Value;

/// Refuses a body with a NUL in any string or key, naming the first one's JSON path.
/// Only a `\u0000` escape can put a NUL in JSON (raw control characters are not allowed in
/// strings), so the body is walked only when that text occurs.
pub fn refuse_nul(body: &[u8]) -> Result<(), BodyError> {
    const ESCAPE: &[u8] = b"\\u0000";
    if !body.windows(ESCAPE.len()).any(|w| w == ESCAPE) {
        return Ok(());
    }
    // Unparseable bodies are reported by the caller's own parse.
    let Ok(value) = serde_json::from_slice::<Value>(body) else { return Ok(()) };
    match nul_path(&value) {
        Some(path) => Err(BodyError::Shape {
            detail: format!("`{path}` contains U+0000 (a NUL character), which Trellis does not accept; remove it"),
            path: Some(path),
            code: "nul_character",
        }),
        None => Ok(()),
    }
}

/// The JSON path (`input.items[2].name`, `$` for the root) of the first string or key
/// holding a NUL.
pub fn nul_path(value: &Value) -> Option<String> {
    fn walk(value: &Value, path: &mut String) -> bool {
        match value {
            Value::String(s) => s.contains('\0'),
            Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            Value::Object(map) => map.iter().any(|(key, item)| {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key.replace('\0', "\\u0000"));
                let found = key.contains('\0') || walk(item, path);
                if !found {
                    path.truncate(len);
                }
                found
            }),
            _ => false,
        }
    }
    let mut path = String::new();
    walk(value, &mut path).then(|| if path.is_empty() { "$".to_owned() } else { path })
}
