//! Filters by what an instance carried: `input.<path>=<value>` (its input) and
//! `output.<node id>.<path>=<value>` (that node's output), as the instances list, bulk filters,
//! the export, the CLI and the page all write them.
//!
//! A path is dotted object keys (`input.order.customer`); a value that parses as JSON compares
//! as JSON (`42` is the number, `"42"` the string, `true` the boolean), any other text as a
//! string (`acme`). Only scalars compare: an object or array value is refused, as the two
//! databases would not agree on how to compare them.

use serde_json::Value;

/// Content filters one request may give.
pub const MAX_CONTENT_FILTERS: usize = 10;
/// Keys in one path (after `input`, or after `output.<node>`).
pub const MAX_CONTENT_DEPTH: usize = 10;
/// Characters in one key of a path (a node id's limit).
pub const MAX_CONTENT_SEGMENT: usize = 64;
/// Bytes of one value's text.
pub const MAX_CONTENT_VALUE: usize = 1024;

/// Where a content filter looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentSource {
    Input,
    /// The output of this node.
    Output(String),
}

/// One `input.<path>=<value>` or `output.<node>.<path>=<value>`.
#[derive(Debug, Clone, PartialEq)]
pub struct ContentFilter {
    pub source: ContentSource,
    /// Object keys from the input's (or the node output's) top; never empty for the input.
    pub path: Vec<String>,
    /// A scalar: string, number, boolean or null.
    pub value: Value,
}

impl ContentFilter {
    /// Whether a parameter name is a content filter's (and so must parse as one).
    pub fn is_content_name(name: &str) -> bool {
        matches!(name.split('.').next(), Some("input" | "output"))
    }

    /// Reads the parameter `name` with the value `text`; the error says what is wrong, naming
    /// the parameter.
    pub fn parse(name: &str, text: &str) -> Result<ContentFilter, String> {
        let shown: String = name.chars().take(80).collect();
        let fail = |why: String| Err(format!("`{shown}`: {why}"));
        let mut segments = name.split('.');
        let source = match (segments.next(), segments.next()) {
            (Some("input"), _) => ContentSource::Input,
            (Some("output"), Some(node)) if key_ok(node) => ContentSource::Output(node.to_owned()),
            (Some("output"), _) => return fail("write `output.<node id>.<path>` with a node id".to_owned()),
            _ => return fail("a content filter starts with `input.` or `output.`".to_owned()),
        };
        let skip = usize::from(matches!(source, ContentSource::Output(_)));
        let path: Vec<String> = name.split('.').skip(1 + skip).map(str::to_owned).collect();
        if source == ContentSource::Input && path.is_empty() {
            return fail("write `input.<path>`: which key of the input to compare".to_owned());
        }
        if path.len() > MAX_CONTENT_DEPTH {
            return fail(format!("a path has at most {MAX_CONTENT_DEPTH} keys"));
        }
        if let Some(bad) = path.iter().find(|k| !key_ok(k)) {
            let why = if bad.is_empty() {
                "an empty key (two dots, or a dot at an end)".to_owned()
            } else {
                format!(
                    "key `{}` must be 1-{MAX_CONTENT_SEGMENT} letters, digits, `_` or `-`",
                    bad.chars().take(80).collect::<String>()
                )
            };
            return fail(why);
        }
        match read_value(text) {
            Ok(value) => Ok(ContentFilter { source, path, value }),
            Err(why) => fail(why),
        }
    }

    /// Reads `name=value` (the CLI's `--where` and the page's field); the first `=` splits.
    pub fn parse_term(term: &str) -> Result<ContentFilter, String> {
        match term.split_once('=') {
            Some((name, text)) => ContentFilter::parse(name.trim(), text),
            None => Err(format!("`{term}`: write `input.<path>=<value>` or `output.<node>.<path>=<value>`")),
        }
    }

    /// The parameter name: `input.order.customer`, `output.fetch.status`.
    pub fn name(&self) -> String {
        let mut parts = match &self.source {
            ContentSource::Input => vec!["input"],
            ContentSource::Output(node) => vec!["output", node.as_str()],
        };
        parts.extend(self.path.iter().map(String::as_str));
        parts.join(".")
    }

    /// The value's text, which reads back as the same value: a string that would parse as
    /// JSON (`"42"`, `"true"`) is quoted, any other string is itself.
    pub fn text(&self) -> String {
        match &self.value {
            Value::String(s) if serde_json::from_str::<Value>(s).is_err() => s.clone(),
            other => other.to_string(),
        }
    }

    /// `name=value`, as the CLI and the page show it.
    pub fn term(&self) -> String {
        format!("{}={}", self.name(), self.text())
    }
}

fn key_ok(key: &str) -> bool {
    (1..=MAX_CONTENT_SEGMENT).contains(&key.len())
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn read_value(text: &str) -> Result<Value, String> {
    if text.len() > MAX_CONTENT_VALUE {
        return Err(format!("the value has {} bytes; at most {MAX_CONTENT_VALUE}", text.len()));
    }
    let value = serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.to_owned()));
    match &value {
        Value::Object(_) | Value::Array(_) => {
            Err("compares a scalar (string, number, boolean, null); filter on a deeper key instead".to_owned())
        }
        Value::String(s) if s.contains('\0') => Err("the value must not contain NUL".to_owned()),
        _ => Ok(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_that_parse_as_json_compare_as_json_and_others_as_strings() {
        let number = ContentFilter::parse("input.n", "42").unwrap();
        assert_eq!(number.value, json!(42));
        let quoted = ContentFilter::parse("input.n", "\"42\"").unwrap();
        assert_eq!(quoted.value, json!("42"));
        assert_eq!(ContentFilter::parse("input.c", "acme").unwrap().value, json!("acme"));
        assert_eq!(ContentFilter::parse("input.ok", "true").unwrap().value, json!(true));
        for f in [number, quoted, ContentFilter::parse("input.c", "acme corp").unwrap()] {
            assert_eq!(ContentFilter::parse_term(&f.term()).unwrap(), f, "{}", f.term());
        }
    }

    #[test]
    fn output_paths_name_the_node_first() {
        let f = ContentFilter::parse("output.fetch.body.status", "200").unwrap();
        assert_eq!(f.source, ContentSource::Output("fetch".into()));
        assert_eq!(f.path, ["body", "status"]);
        assert_eq!(f.name(), "output.fetch.body.status");
        assert_eq!(ContentFilter::parse("output.fetch", "1").unwrap().path, Vec::<String>::new());
    }

    #[test]
    fn malformed_names_and_values_are_refused_naming_the_parameter() {
        let deep = format!("input{}", ".k".repeat(MAX_CONTENT_DEPTH + 1));
        let long = "x".repeat(MAX_CONTENT_VALUE + 1);
        for (name, value) in [
            ("input", "1"),
            ("input..a", "1"),
            ("input.a.", "1"),
            ("input.a b", "1"),
            ("output", "1"),
            ("output..a", "1"),
            (deep.as_str(), "1"),
            ("input.a", long.as_str()),
            ("input.a", "{\"b\":1}"),
            ("input.a", "[1]"),
        ] {
            let err = ContentFilter::parse(name, value).unwrap_err();
            assert!(err.starts_with(&format!("`{}", &name[..name.len().min(20)])), "{err}");
        }
        assert!(ContentFilter::parse_term("input.a").is_err());
        assert!(ContentFilter::is_content_name("input.a") && ContentFilter::is_content_name("output"));
        assert!(!ContentFilter::is_content_name("inputs.a") && !ContentFilter::is_content_name("status"));
    }
}
