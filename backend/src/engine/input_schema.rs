//! Workflows' `input_schema` (JSON Schema 2020-12): compiled once per version, beside the
//! plan that caches it, and checked at every start (`start.rs`), whoever starts.
//!
//! Bounded cost: the schema arrives inside a definition (so within the body limit); regexes
//! (`pattern`, `patternProperties`, `format: regex`) run on the `regex` crate, whose matching
//! is linear in the input whatever the pattern, with its compiled size capped, so a schema
//! cannot hang or swell the server. No `$ref` is fetched: only the schema's own and the
//! standard meta-schemas resolve.

use jsonschema::{PatternOptions, Validator};
use serde_json::Value;
use std::fmt::Write;
use trellis_model::excerpt::{excerpt, value_excerpt};
use trellis_model::Issue;

/// Violations listed per refused start: enough to fix the input, bounded for the answer.
pub const MAX_LISTED: usize = 50;
/// Violations counted beyond those listed (for "and N more"), bounding the work.
pub const MAX_COUNTED: usize = 10_000;
/// The most of an offending value a violation quotes.
pub const MAX_QUOTED: usize = 100;
/// The longest violation message (its path and whatever the message lists are cut to fit).
const MAX_MESSAGE: usize = 500;
/// The most of an input path a violation quotes.
const MAX_PATH_SHOWN: usize = 200;
/// A compiled regex's size: generous for real patterns, small against memory.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles `schema`; `Err` says why it is not a usable schema.
pub fn compile(schema: &Value) -> Result<Validator, String> {
    if !schema.is_object() && !schema.is_boolean() {
        return Err("it must be an object (or true/false)".into());
    }
    jsonschema::draft202012::options()
        .with_pattern_options(PatternOptions::regex().size_limit(REGEX_SIZE_LIMIT).dfa_size_limit(REGEX_SIZE_LIMIT))
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| {
            let at = e.instance_path().to_string();
            let why = match at.is_empty() {
                true => e.to_string(),
                false => format!("at {at}: {e}"),
            };
            excerpt(&why, MAX_MESSAGE).into_owned()
        })
}

/// The problem a save or publish reports for a schema that does not compile.
pub fn schema_issue(schema: &Value) -> Option<Issue> {
    let why = compile(schema).err()?;
    Some(
        Issue::new("invalid_settings", format!("`input_schema` is not a valid JSON Schema: {why}"))
            .path("settings.input_schema"),
    )
}

/// How a start's input violates the schema: the first [`MAX_LISTED`] violations, and how
/// many more were found (counted up to [`MAX_COUNTED`]).
#[derive(Debug, Default)]
pub struct Violations {
    pub listed: Vec<Issue>,
    pub unlisted: usize,
}

impl Violations {
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// The refusal's summary: the listed violations' messages, one after the other, then
    /// how many more there are.
    pub fn detail(&self) -> String {
        let listed: Vec<&str> = self.listed.iter().map(|i| i.message.as_str()).collect();
        let more = match self.unlisted {
            0 => String::new(),
            n if n >= MAX_COUNTED => format!("; and at least {n} more"),
            n => format!("; and {n} more"),
        };
        format!("the input does not match the workflow's input_schema: {}{more}", listed.join("; "))
    }
}

/// Each way `input` violates the schema, at most [`MAX_LISTED`]: `path` is the JSON Pointer
/// into the input (`/order/id`, empty for the whole input), `message` leads with it. A
/// message quotes at most [`MAX_QUOTED`] bytes of the offending value, marked when cut: the
/// value may be the whole input, once per failing branch of an `allOf`.
pub fn violations(validator: &Validator, input: &Value) -> Violations {
    let mut errors = validator.iter_errors(input);
    let listed = errors.by_ref().take(MAX_LISTED).map(|e| issue(&e)).collect();
    Violations { listed, unlisted: errors.take(MAX_COUNTED).count() }
}

fn issue(e: &jsonschema::ValidationError<'_>) -> Issue {
    let path = excerpt(&e.instance_path().to_string(), MAX_PATH_SHOWN).into_owned();
    let shown = if path.is_empty() { "/" } else { path.as_str() };
    let quoted = value_excerpt(e.instance(), MAX_QUOTED);
    // Written through a bounded sink: a message may also list the value's keys, all of them.
    let mut message = Bounded { text: format!("{shown}: "), max: MAX_MESSAGE };
    let _ = write!(message, "{}", e.masked_with(quoted));
    let mut issue = Issue::new("input_schema", excerpt(&message.text, MAX_MESSAGE));
    issue.path = Some(path);
    issue
}

/// A `fmt::Write` that keeps `max` bytes and a little more, then stops the formatting.
struct Bounded {
    text: String,
    max: usize,
}

impl std::fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.text.push_str(s);
        match self.text.len() > self.max {
            true => Err(std::fmt::Error),
            false => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_violation_is_listed_by_path() {
        let schema = json!({"type": "object", "required": ["order"], "properties": {"order": {"type": "object",
            "properties": {"id": {"type": "integer"}, "email": {"type": "string", "format": "email"}}}}});
        let validator = compile(&schema).unwrap();
        let found = violations(&validator, &json!({"order": {"id": "abc", "email": "nope"}})).listed;
        let mut paths: Vec<_> = found.iter().map(|i| i.path.clone().unwrap()).collect();
        paths.sort();
        assert_eq!(paths, ["/order/email", "/order/id"], "{found:?}");
        assert!(found.iter().any(|i| i.message == r#"/order/id: "abc" is not of type "integer""#), "{found:?}");
        assert_eq!(violations(&validator, &json!({})).listed.len(), 1);
        assert!(violations(&validator, &json!({"order": {"id": 1}})).is_empty());
    }

    #[test]
    fn what_is_not_a_schema_is_refused_with_why() {
        for bad in
            [json!(3), json!("x"), json!({"type": "intger"}), json!({"pattern": "(?<=a)b"}), json!({"minimum": "1"})]
        {
            let issue = schema_issue(&bad).unwrap_or_else(|| panic!("{bad} was taken"));
            assert_eq!(issue.path.as_deref(), Some("settings.input_schema"));
        }
        assert!(schema_issue(&json!(true)).is_none());
        assert!(schema_issue(&json!({"type": "object", "properties": {"a": {"pattern": "^(a+)+$"}}})).is_none());
    }

    #[test]
    fn a_catastrophic_pattern_runs_in_linear_time() {
        let validator = compile(&json!({"type": "string", "pattern": "^(a+)+$"})).unwrap();
        let input = json!(format!("{}!", "a".repeat(100_000)));
        assert_eq!(violations(&validator, &input).listed.len(), 1);
    }

    #[test]
    fn a_large_input_failing_many_branches_is_quoted_short_and_counted() {
        let branches: Vec<Value> = (0..80).map(|i| json!({"required": [format!("k{i}")]})).collect();
        let validator = compile(&json!({"allOf": branches, "type": "array"})).unwrap();
        let input = json!({"text": "x".repeat(250_000)});
        let found = violations(&validator, &input);
        assert_eq!((found.listed.len(), found.unlisted), (MAX_LISTED, 81 - MAX_LISTED));
        let detail = found.detail();
        assert!(detail.len() < 50 * (MAX_MESSAGE + 10), "{}", detail.len());
        assert!(detail.ends_with(&format!("; and {} more", 81 - MAX_LISTED)), "{detail}");
        let first = &found.listed[0].message;
        assert!(first.starts_with(r#"/: {"text":"xxx"#) && first.contains(trellis_model::excerpt::CUT_MARK), "{first}");
    }
}
