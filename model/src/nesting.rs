//! How deep stored JSON may nest. serde_json refuses to read text nested 128 containers deep,
//! so a value stored that deep can never be read back: one row would break every list, export
//! and page that reads it. Every value a user or a node hands Trellis (a start's input, a
//! node's output, a signal's payload, a task's result) is held to [`MAX_JSON_DEPTH`], far
//! enough below that what Trellis itself wraps around a value still reads back: a failure
//! handler's input holds the failed input [`HANDLER_INPUT_WRAP`] levels down (per handler in
//! a chain of at most `MAX_FAILURE_HANDLER_DEPTH`), a map's output its items'
//! [`MAP_RESULTS_WRAP`] down, an instance's output its sinks' [`INSTANCE_OUTPUT_WRAP`] down,
//! and expression contexts and API answers a few levels more.

use serde_json::Value;

/// The deepest nesting (containers within containers) of a value handed to Trellis.
pub const MAX_JSON_DEPTH: usize = 64;
/// Levels a failure handler's input adds around the failed instance's: `{"instance": {"input": …}}`.
pub const HANDLER_INPUT_WRAP: usize = 2;
/// Levels a map's output adds around each item's output: `{"results": [...]}`.
pub const MAP_RESULTS_WRAP: usize = 2;
/// Levels an instance's output adds around its sinks' outputs: `{"<node>": …}`.
pub const INSTANCE_OUTPUT_WRAP: usize = 1;

/// Where `value` nests deeper than `limit` containers, if it does: the JSON Pointer of the
/// first container past the limit (`/a/0/b`). Walks no deeper than `limit` + 1, whatever
/// the value's own depth.
pub fn too_deep(value: &Value, limit: usize) -> Option<String> {
    fn walk(value: &Value, left: usize, path: &mut Vec<String>) -> bool {
        let is_container = matches!(value, Value::Array(_) | Value::Object(_));
        if is_container && left == 0 {
            return true;
        }
        let mut descend = |segment: String, child: &Value| {
            path.push(segment);
            let found = walk(child, left - 1, path);
            if !found {
                path.pop();
            }
            found
        };
        match value {
            Value::Array(items) => items.iter().enumerate().any(|(i, item)| descend(i.to_string(), item)),
            Value::Object(map) => {
                map.iter().any(|(key, item)| descend(key.replace('~', "~0").replace('/', "~1"), item))
            }
            _ => false,
        }
    }
    let mut path = Vec::new();
    walk(value, limit, &mut path).then(|| path.iter().map(|s| format!("/{s}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> Value {
        (0..levels).fold(json!(1), |inner, _| json!({"a": inner}))
    }

    #[test]
    fn the_first_container_past_the_limit_is_named() {
        assert_eq!(too_deep(&json!(1), 0), None);
        assert_eq!(too_deep(&json!([]), 0).as_deref(), Some(""));
        assert_eq!(too_deep(&nested(3), 3), None);
        assert_eq!(too_deep(&nested(4), 3).as_deref(), Some("/a/a/a"));
        let mixed = json!({"x": 1, "l/s": [0, {"t~": [[]]}]});
        assert_eq!(too_deep(&mixed, 5), None);
        assert_eq!(too_deep(&mixed, 4).as_deref(), Some("/l~1s/1/t~0/0"));
    }

    #[test]
    fn a_value_far_deeper_than_the_limit_is_walked_only_to_it() {
        let deep = (0..5_000).fold(Value::Null, |inner, _| Value::Array(vec![inner]));
        assert_eq!(too_deep(&deep, MAX_JSON_DEPTH).map(|p| p.matches('/').count()), Some(MAX_JSON_DEPTH));
        std::mem::forget(deep); // dropping 5,000 levels recursively is the test's concern, not the walk's
    }
}
