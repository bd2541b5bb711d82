//! Expression preview: evaluates a `transform` or `branch` expression against sample input in
//! the browser with the engine's own evaluator (`trellis_model::expr`), so what the preview
//! shows is what a run computes. Earlier
//! nodes' outputs are unknown at design time; the sample may supply them under `nodes`.

use serde_json::{json, Value};
use trellis_model::expr::Expressions;

/// The context an expression sees: `input`, `nodes` and `instance`. A sample shaped like
/// `{"input": ..., "nodes": ...}` is used as it is; any other JSON is taken as the input.
pub fn context(sample: &Value) -> Value {
    match sample {
        Value::Object(map) if map.contains_key("input") && map.keys().all(|k| k == "input" || k == "nodes") => {
            json!({
                "input": map["input"],
                "nodes": map.get("nodes").cloned().unwrap_or_else(|| json!({})),
                "instance": {"id": "preview"}
            })
        }
        other => json!({"input": other, "nodes": {}, "instance": {"id": "preview"}}),
    }
}

/// The value of `expression` for `sample_json`, or why there is none.
pub fn evaluate(expression: &str, sample_json: &str) -> Result<Value, String> {
    if expression.trim().is_empty() {
        return Err("Type an expression to see its value.".to_owned());
    }
    let sample: Value = if sample_json.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(sample_json).map_err(|e| format!("The sample input is not valid JSON: {e}"))?
    };
    let context = context(&sample);
    Expressions::default().eval(expression, &context).map_err(|e| {
        let no_nodes = context["nodes"].as_object().is_some_and(|n| n.is_empty());
        if no_nodes && expression.contains("nodes.") && e.starts_with("expression failed") {
            format!("{e}. Earlier nodes' outputs are not known here: give them in the sample, as {NODES_SAMPLE}")
        } else {
            e
        }
    })
}

/// How a sample supplies earlier nodes' outputs.
const NODES_SAMPLE: &str = r#"{"input": {...}, "nodes": {"<id>": {"output": ...}}}"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_evaluate_against_the_sample_input() {
        assert_eq!(evaluate("input.n * 2", r#"{"n": 21}"#), Ok(json!(42)));
        assert_eq!(evaluate("{'ok': input.items | length > 1}", r#"{"items": [1, 2]}"#), Ok(json!({"ok": true})));
        let with_nodes = r#"{"input": {}, "nodes": {"a": {"output": {"v": 5}}}}"#;
        assert_eq!(evaluate("nodes.a.output.v", with_nodes), Ok(json!(5)));
        assert_eq!(evaluate("instance.id", ""), Ok(json!("preview")));
    }

    #[test]
    fn mistakes_are_explained_like_the_engine_does() {
        assert!(evaluate("input.missing.deeper", "{}").unwrap_err().starts_with("expression failed"));
        assert!(evaluate("input.(", "{}").unwrap_err().starts_with("invalid expression"));
        assert!(evaluate("input", "{").unwrap_err().contains("not valid JSON"));
        assert!(evaluate("  ", "{}").is_err());
        let unknown = evaluate("nodes.script_1.output", r#"{"n": 1}"#).unwrap_err();
        assert!(unknown.contains("give them in the sample"), "{unknown}");
    }
}
