//! Expression preview: evaluates a `transform` or `branch` expression against sample input in
//! the browser with the engine's own evaluator (`trellis_model::expr`), so what the preview
//! shows is what a run computes. Earlier
//! nodes' outputs are unknown at design time; the sample may supply them under `nodes`.

use serde_json::{json, Value};
use trellis_model::expr::Expressions;

/// What a sample shaped as a whole context may hold (`item` and `index` for a map's inner node).
const SAMPLE_ROOTS: [&str; 4] = ["input", "nodes", "item", "index"];

/// Whether a sample is shaped as a whole context (`{"input": ..., "nodes"?: ...}`), not an input.
fn is_whole(sample: &Value) -> bool {
    sample.as_object().is_some_and(|m| m.contains_key("input") && m.keys().all(|k| SAMPLE_ROOTS.contains(&k.as_str())))
}

/// The context an expression sees: `input`, `nodes` and `instance`. A sample shaped like
/// `{"input": ..., "nodes": ...}` is used as it is; any other JSON is taken as the input.
pub fn context(sample: &Value) -> Value {
    match sample {
        Value::Object(map) if is_whole(sample) => {
            json!({
                "input": map["input"],
                "nodes": map.get("nodes").cloned().unwrap_or_else(|| json!({})),
                "instance": {"id": "preview"}
            })
        }
        other => json!({"input": other, "nodes": {}, "instance": {"id": "preview"}}),
    }
}

/// A sample shaped as a whole context from a finished or running run: its input and what each
/// node produced, as the engine's context gives them (`nodes.ID.output`, `nodes.ID.status`).
pub fn sample_from_run(input: &Value, nodes: &[trellis_model::api::NodeView]) -> Value {
    let nodes: serde_json::Map<String, Value> = nodes
        .iter()
        .map(|n| (n.id.clone(), json!({"output": n.output.clone().unwrap_or(Value::Null), "status": n.status})))
        .collect();
    json!({"input": input, "nodes": nodes})
}

/// The value of `expression` for `sample_json`, or why there is none.
pub fn evaluate(expression: &str, sample_json: &str) -> Result<Value, String> {
    if expression.trim().is_empty() {
        return Err("Type an expression to see its value.".to_owned());
    }
    evaluate_in(expression, &context(&parse_sample(sample_json)?))
}

/// The value of `expression` inside a map whose items are `items_expression`: it also sees
/// `item` and `index`, the first item the map would run for the sample (or the sample's own
/// `item` and `index` when it gives them), as the engine gives each item's node.
pub fn evaluate_per_item(expression: &str, items_expression: &str, sample_json: &str) -> Result<Value, String> {
    if expression.trim().is_empty() {
        return Err("Type an expression to see its value.".to_owned());
    }
    let sample = parse_sample(sample_json)?;
    let mut context = context(&sample);
    let given = sample
        .get("item")
        .filter(|_| is_whole(&sample))
        .map(|item| (item.clone(), sample.get("index").cloned().unwrap_or(json!(0))));
    let (item, index) = match given {
        Some(pair) => pair,
        None => (first_item(items_expression, &context)?, json!(0)),
    };
    if let Value::Object(roots) = &mut context {
        roots.insert("item".to_owned(), item);
        roots.insert("index".to_owned(), index);
    }
    evaluate_in(expression, &context)
}

/// The first item `items_expression` gives in `context`, or why there is none to preview with.
fn first_item(items_expression: &str, context: &Value) -> Result<Value, String> {
    let how = r#"or give one in the sample, as {"input": {...}, "item": ..., "index": 0}"#;
    if items_expression.trim().is_empty() {
        return Err(format!("Give the map its items to preview with the first one, {how}."));
    }
    match Expressions::default().eval(items_expression, context) {
        Ok(Value::Array(items)) if !items.is_empty() => Ok(items[0].clone()),
        Ok(Value::Array(_)) => Err(format!("The map's items are an empty list for this sample; {how}.")),
        Ok(other) => Err(format!("The map's items are not a list for this sample (got {other}); {how}.")),
        Err(e) => Err(format!("The map's items cannot be read for this sample ({e}); {how}.")),
    }
}

fn parse_sample(sample_json: &str) -> Result<Value, String> {
    if sample_json.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(sample_json).map_err(|e| format!("The sample input is not valid JSON: {e}"))
}

fn evaluate_in(expression: &str, context: &Value) -> Result<Value, String> {
    Expressions::default().eval(expression, context).map_err(|e| {
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
    fn a_run_gives_a_sample_whose_nodes_read_as_in_the_engine() {
        let node: trellis_model::api::NodeView = serde_json::from_value(json!({"id": "fetch", "status": "succeeded",
            "attempts": 1, "started_at": null, "ended_at": null, "output": {"status": 200}, "error": null}))
        .unwrap();
        let sample = sample_from_run(&json!({"order": 7}), &[node]).to_string();
        assert_eq!(
            evaluate("[input.order, nodes.fetch.output.status, nodes.fetch.status]", &sample),
            Ok(json!([7, 200, "succeeded"]))
        );
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

    #[test]
    fn inside_a_map_the_first_item_is_in_scope() {
        let sample = r#"{"orders": [{"id": 7}, {"id": 8}]}"#;
        assert_eq!(evaluate_per_item("item.id * 10 + index", "input.orders", sample), Ok(json!(70)));
        let given = r#"{"input": {}, "item": {"id": 3}, "index": 4}"#;
        assert_eq!(evaluate_per_item("item.id + index", "input.orders", given), Ok(json!(7)));
        let empty = evaluate_per_item("item", "input.orders", r#"{"orders": []}"#).unwrap_err();
        assert!(empty.contains("empty list") && empty.contains(r#""item""#), "{empty}");
        assert!(evaluate_per_item("item", "input.n", r#"{"n": 1}"#).unwrap_err().contains("not a list"));
        assert!(evaluate_per_item("item", "", "{}").unwrap_err().contains("Give the map its items"));
        // An input that happens to have an `item` key is an input, not the item.
        assert_eq!(evaluate_per_item("item", "input.list", r#"{"item": 1, "list": [2]}"#), Ok(json!(2)));
    }
}
