//! The difference of two JSON values as the paths that were added, removed or changed: objects
//! are walked key by key, arrays index by index; anything else (or a change of type) differs as
//! a whole at its path. Paths read like the list's content filters: `order.items[2].sku`.

use serde_json::Value;

/// At most this many changes are listed: two unrelated outputs could otherwise list thousands.
pub const MAX_CHANGES: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Where: empty for the whole value.
    pub path: String,
    pub kind: ChangeKind,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

/// Every path where `after` differs from `before`, in key order (objects keep serde_json's
/// sorted keys), cut at [`MAX_CHANGES`]. Equal values give none.
pub fn diff(before: &Value, after: &Value) -> Vec<Change> {
    let mut changes = Vec::new();
    walk("", before, after, &mut changes);
    changes.truncate(MAX_CHANGES);
    changes
}

fn walk(path: &str, before: &Value, after: &Value, out: &mut Vec<Change>) {
    if out.len() >= MAX_CHANGES || before == after {
        return;
    }
    match (before, after) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))).collect();
            keys.sort();
            for key in keys {
                let at = key_path(path, key);
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => walk(&at, x, y, out),
                    (Some(x), None) => out.push(change(at, ChangeKind::Removed, Some(x), None)),
                    (None, Some(y)) => out.push(change(at, ChangeKind::Added, None, Some(y))),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let at = format!("{path}[{i}]");
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => walk(&at, x, y, out),
                    (Some(x), None) => out.push(change(at, ChangeKind::Removed, Some(x), None)),
                    (None, Some(y)) => out.push(change(at, ChangeKind::Added, None, Some(y))),
                    (None, None) => {}
                }
            }
        }
        _ => out.push(change(path.to_owned(), ChangeKind::Changed, Some(before), Some(after))),
    }
}

fn change(path: String, kind: ChangeKind, before: Option<&Value>, after: Option<&Value>) -> Change {
    Change { path, kind, before: before.cloned(), after: after.cloned() }
}

/// `path.key`, or `path["odd key"]` for a key that is not a plain name.
fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    match (plain, path.is_empty()) {
        (true, true) => key.to_owned(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{}]", Value::String(key.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(changes: &[Change]) -> Vec<(&str, &str)> {
        changes.iter().map(|c| (c.path.as_str(), c.kind.as_str())).collect()
    }

    #[test]
    fn equal_values_have_no_changes() {
        let v = json!({"a": [1, {"b": null}], "c": "x"});
        assert!(diff(&v, &v.clone()).is_empty());
    }

    #[test]
    fn nested_keys_are_added_removed_and_changed_by_path() {
        let before = json!({"order": {"id": 4411, "items": [{"sku": "a"}, {"sku": "b"}], "old": true}, "same": 1});
        let after =
            json!({"order": {"id": 4412, "items": [{"sku": "a"}, {"sku": "c"}, {"sku": "d"}], "new": "x"}, "same": 1});
        assert_eq!(
            kinds(&diff(&before, &after)),
            [
                ("order.id", "changed"),
                ("order.items[1].sku", "changed"),
                ("order.items[2]", "added"),
                ("order.new", "added"),
                ("order.old", "removed"),
            ]
        );
    }

    #[test]
    fn a_change_of_type_or_a_scalar_root_differs_as_a_whole() {
        let changes = diff(&json!({"a": {"b": 1}}), &json!({"a": [1]}));
        assert_eq!(kinds(&changes), [("a", "changed")]);
        assert_eq!(changes[0].before, Some(json!({"b": 1})));
        assert_eq!(changes[0].after, Some(json!([1])));
        assert_eq!(kinds(&diff(&json!(1), &json!("1"))), [("", "changed")], "1 and \"1\" differ");
        assert_eq!(kinds(&diff(&json!(null), &json!({"a": 1}))), [("", "changed")]);
    }

    #[test]
    fn shorter_arrays_lose_their_tail_and_odd_keys_are_quoted() {
        assert_eq!(kinds(&diff(&json!([1, 2, 3]), &json!([1]))), [("[1]", "removed"), ("[2]", "removed")]);
        assert_eq!(kinds(&diff(&json!({"a b": 1}), &json!({"a b": 2}))), [("[\"a b\"]", "changed")]);
        assert_eq!(kinds(&diff(&json!({"x": {"": 1}}), &json!({"x": {}}))), [("x[\"\"]", "removed")]);
    }

    #[test]
    fn a_huge_difference_is_cut_at_the_limit() {
        let before = json!((0..2_000).collect::<Vec<_>>());
        let after = json!((1..2_001).collect::<Vec<_>>());
        let changes = diff(&before, &after);
        assert_eq!(changes.len(), MAX_CHANGES);
        assert_eq!(changes[0].path, "[0]");
    }
}
