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
use trellis_model::Issue;

/// Violations listed per refused start: enough to fix the input, bounded for the answer.
pub const MAX_LISTED: usize = 50;
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
            match at.is_empty() {
                true => e.to_string(),
                false => format!("at {at}: {e}"),
            }
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

/// Each way `input` violates the schema, at most [`MAX_LISTED`]: `path` is the JSON Pointer
/// into the input (`/order/id`, empty for the whole input), `message` leads with it.
pub fn violations(validator: &Validator, input: &Value) -> Vec<Issue> {
    validator
        .iter_errors(input)
        .take(MAX_LISTED)
        .map(|e| {
            let path = e.instance_path().to_string();
            let shown = if path.is_empty() { "/" } else { path.as_str() };
            let mut issue = Issue::new("input_schema", format!("{shown}: {e}"));
            issue.path = Some(path);
            issue
        })
        .collect()
}

/// The refusal's summary: the violations' messages, one after the other.
pub fn detail(issues: &[Issue]) -> String {
    let listed: Vec<&str> = issues.iter().map(|i| i.message.as_str()).collect();
    format!("the input does not match the workflow's input_schema: {}", listed.join("; "))
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
        let found = violations(&validator, &json!({"order": {"id": "abc", "email": "nope"}}));
        let mut paths: Vec<_> = found.iter().map(|i| i.path.clone().unwrap()).collect();
        paths.sort();
        assert_eq!(paths, ["/order/email", "/order/id"], "{found:?}");
        assert!(found.iter().any(|i| i.message == r#"/order/id: "abc" is not of type "integer""#), "{found:?}");
        assert_eq!(violations(&validator, &json!({})).len(), 1);
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
        assert_eq!(violations(&validator, &input).len(), 1);
    }
}
