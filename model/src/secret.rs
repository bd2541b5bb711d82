//! Secrets as node configs see them: a name (`[A-Za-z_][A-Za-z0-9_]{0,63}`) referenced as
//! `{{ secret.NAME }}` in a template (or `secret.NAME` in an expression). Which secrets a node
//! references is read from its config's texts, never compiled (as `expr::scope` reads what a text
//! reaches): the server decrypts exactly those for the node's attempt and validation refuses a
//! name that does not exist. Only a static name counts: `secret[x]`, `secret | items` or
//! `debug(secret)` would need every secret, so they are refused.

use crate::config::NodeKind;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The root name secrets have in a node's expressions.
pub const ROOT: &str = "secret";
/// The longest secret name.
pub const MAX_NAME_LEN: usize = 64;
/// The pattern every name matches (for messages and the OpenAPI document).
pub const NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]{0,63}$";

/// Whether `name` is a secret name: `[A-Za-z_][A-Za-z0-9_]{0,63}`.
pub fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.len() <= MAX_NAME_LEN
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A use of `secret` that names no secret, at a node's config `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadReference {
    pub path: String,
    pub message: String,
}

/// The secrets a node of `kind` with `config` references, or the uses that name none.
pub fn node_references(kind: NodeKind, config: &Value) -> Result<BTreeSet<String>, Vec<BadReference>> {
    node_references_at(kind, config).map(|names| names.into_keys().collect())
}

/// As [`node_references`], each name with the config path of its first use (`config.headers.Authorization`),
/// so a problem with a name points at the field that holds it.
pub fn node_references_at(kind: NodeKind, config: &Value) -> Result<BTreeMap<String, String>, Vec<BadReference>> {
    let mut found = Found::default();
    match kind {
        // Its `items`, and the inner node's texts as that node's own type reads them.
        NodeKind::Map => found.walk_map(config),
        // Every string of a config that renders (a JavaScript source does not).
        _ if kind.renders() => found.walk(kind, config, "config", true),
        _ => {}
    }
    if found.debug && !found.names.is_empty() {
        // `debug()` shows the whole context, `secret` included, in any text of the node.
        let message = "`debug()` cannot be used in a node that references a secret".to_owned();
        found.bad.push(BadReference { path: "config".into(), message });
    }
    if found.bad.is_empty() {
        Ok(found.names)
    } else {
        Err(found.bad)
    }
}

/// Whether a top-level config field of `kind` is an expression (evaluated whole) rather than
/// a template (only its `{{ }}` and `{% %}` blocks are code).
fn is_expression(kind: NodeKind, field: &str) -> bool {
    kind.field(field).is_some_and(|f| f.code == crate::node_types::Code::Expression)
}

/// What a node's texts reference.
#[derive(Default)]
struct Found {
    /// Each name, with the path of the first text that uses it.
    names: BTreeMap<String, String>,
    bad: Vec<BadReference>,
    /// Some text calls `debug`.
    debug: bool,
}

impl Found {
    fn walk_map(&mut self, config: &Value) {
        if let Some(items) = config.get("items") {
            self.walk(NodeKind::Map, items, "config.items", true);
        }
        let inner = config.get("node");
        let kind = inner.and_then(|n| n.get("type")).and_then(Value::as_str).and_then(NodeKind::parse);
        match (kind, inner.and_then(|n| n.get("config"))) {
            (Some(kind), Some(inner)) if crate::map::may_run_inside(kind) => match node_references_at(kind, inner) {
                Ok(names) => {
                    for (name, path) in names {
                        self.names.entry(name).or_insert_with(|| format!("config.node.{path}"));
                    }
                }
                Err(bad) => self
                    .bad
                    .extend(bad.into_iter().map(|b| BadReference { path: format!("config.node.{}", b.path), ..b })),
            },
            _ => {}
        }
    }

    fn walk(&mut self, kind: NodeKind, value: &Value, path: &str, top: bool) {
        match value {
            Value::String(text) => {
                let field = path.rsplit('.').next().unwrap_or_default();
                let code = if top && is_expression(kind, field) { vec![text.as_str()] } else { template_code(text) };
                self.debug |= code.iter().any(|c| c.contains("debug"));
                for text in code {
                    match references_in(text) {
                        Ok(names) => {
                            for name in names {
                                self.names.entry(name).or_insert_with(|| path.to_owned());
                            }
                        }
                        Err(message) => self.bad.push(BadReference { path: path.to_owned(), message }),
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.walk(kind, item, &format!("{path}[{i}]"), false);
                }
            }
            Value::Object(fields) => {
                for (key, item) in fields {
                    self.walk(kind, item, &format!("{path}.{key}"), top && path == "config");
                }
            }
            _ => {}
        }
    }
}

/// The code parts of a template: the insides of its `{{ }}` and `{% %}` blocks.
fn template_code(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{").into_iter().chain(rest.find("{%")).min() {
        let close = if rest[start..].starts_with("{{") { "}}" } else { "%}" };
        let inner = &rest[start + 2..];
        let end = inner.find(close).unwrap_or(inner.len());
        parts.push(&inner[..end]);
        rest = &inner[(end + close.len()).min(inner.len())..];
    }
    parts
}

/// The secrets `code` names; `Err` when it uses `secret` without a valid static name.
fn references_in(code: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    if !code.contains(ROOT) {
        return Ok(names);
    }
    for path in crate::expr::scope::paths_from(code, ROOT) {
        match path.first() {
            Some(name) if is_valid_name(name) => names.push(name.clone()),
            Some(name) => return Err(format!("`{name}` is not a secret name (letters, digits and _, at most 64)")),
            None => return Err("a secret is referenced by its name, as `secret.NAME`".into()),
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_pattern() {
        for good in ["TOKEN", "_x", "a1_B", &"A".repeat(64)] {
            assert!(is_valid_name(good), "{good}");
        }
        for bad in ["", "1A", "a-b", "a b", "é", &"A".repeat(65)] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_node_references_the_secrets_its_templates_and_expressions_name() {
        let http = json!({"url": "https://x/{{ secret.PATH }}", "headers": {"Authorization": "Bearer {{ secret.TOKEN }}"},
                          "body": {"k": ["{{ secret['B'] }}", "plain secret text"]}});
        let names = node_references(NodeKind::Http, &http).unwrap();
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["B", "PATH", "TOKEN"]);
        let at = node_references_at(NodeKind::Http, &http).unwrap();
        assert_eq!(at["TOKEN"], "config.headers.Authorization");
        assert_eq!(at["B"], "config.body.k[0]");
        let map = json!({"items": "[1]", "node": {"type": "http", "config": {"url": "{{ secret.U }}"}}});
        assert_eq!(node_references_at(NodeKind::Map, &map).unwrap()["U"], "config.node.config.url");
        let transform = json!({"expression": "secret.KEY ~ input.x"});
        assert_eq!(node_references(NodeKind::Transform, &transform).unwrap().len(), 1);
        let script = json!({"source": "return secret.X"});
        assert!(node_references(NodeKind::Script, &script).unwrap().is_empty());
        let prose = json!({"message": "the secret is out"});
        assert!(node_references(NodeKind::Fail, &prose).unwrap().is_empty());
    }

    #[test]
    fn a_use_of_secret_without_a_static_name_is_refused_with_its_path() {
        for text in ["{{ secret[input.k] }}", "{{ secret | tojson }}", "{{ secret.items() }}"] {
            let bad = node_references(NodeKind::Http, &json!({"url": text})).unwrap_err();
            assert_eq!(bad[0].path, "config.url", "{text}");
        }
        let debug = json!({"url": "{{ secret.A }}", "body": {"all": "{{ debug() }}"}});
        assert!(node_references(NodeKind::Http, &debug).unwrap_err()[0].message.contains("debug()"));
        assert!(node_references(NodeKind::Http, &json!({"body": "{{ debug() }}"})).unwrap().is_empty());
        let bad = node_references(NodeKind::Transform, &json!({"expression": "secret"})).unwrap_err();
        assert!(bad[0].message.contains("secret.NAME"), "{bad:?}");
    }
}
