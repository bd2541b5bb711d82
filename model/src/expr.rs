//! Expressions and templates in node configs, with minijinja: `input.user.id`,
//! `nodes.fetch.output.body.items | length`, and `{{ ... }}` inside strings.
//!
//! Evaluation is bounded (fuel) and strict: a reference to something that does not exist
//! is an error naming it, so a typo fails the node instead of sending `""` somewhere.
//!
//! It lives in the model so the engine and the designer's preview (in wasm) evaluate with
//! one configuration: what the preview shows is what a run computes.

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde_json::Value;

pub struct Expressions {
    env: Environment<'static>,
}

impl Default for Expressions {
    fn default() -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_fuel(Some(200_000));
        Expressions { env }
    }
}

impl Expressions {
    /// Evaluates an expression (no braces) to a JSON value.
    pub fn eval(&self, expression: &str, context: &Value) -> Result<Value, String> {
        let compiled = self.env.compile_expression(expression).map_err(|e| describe("invalid expression", &e))?;
        let value = compiled.eval(minijinja::Value::from_serialize(context)).map_err(|e| describe("expression failed", &e))?;
        serde_json::to_value(&value).map_err(|e| format!("expression result is not JSON: {e}"))
    }

    /// Renders `{{ ... }}` in a string; strings without template syntax are returned as they are.
    pub fn render(&self, template: &str, context: &Value) -> Result<String, String> {
        if !template.contains("{{") && !template.contains("{%") {
            return Ok(template.to_owned());
        }
        self.env.render_str(template, context).map_err(|e| describe("template failed", &e))
    }

    /// Renders every string inside a JSON value.
    pub fn render_value(&self, value: &Value, context: &Value) -> Result<Value, String> {
        Ok(match value {
            Value::String(s) => Value::String(self.render(s, context)?),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.render_value(v, context)).collect::<Result<_, _>>()?),
            Value::Object(map) => Value::Object(
                map.iter().map(|(k, v)| Ok((k.clone(), self.render_value(v, context)?))).collect::<Result<_, String>>()?,
            ),
            other => other.clone(),
        })
    }
}

fn describe(what: &str, e: &minijinja::Error) -> String {
    match e.detail() {
        Some(detail) => format!("{what}: {} ({detail})", e.kind()),
        None => format!("{what}: {}", e.kind()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expressions_see_the_input_and_earlier_outputs() {
        let x = Expressions::default();
        let ctx = json!({"input": {"n": 3}, "nodes": {"a": {"output": {"items": [1, 2]}}}});
        assert_eq!(x.eval("input.n * 2", &ctx).unwrap(), json!(6));
        assert_eq!(x.eval("nodes.a.output.items | length", &ctx).unwrap(), json!(2));
        assert_eq!(x.eval("{'sum': input.n + 1}", &ctx).unwrap(), json!({"sum": 4}));
        assert_eq!(x.render("id={{ input.n }}", &ctx).unwrap(), "id=3");
        assert_eq!(x.render_value(&json!({"a": ["{{ input.n }}", 1]}), &ctx).unwrap(), json!({"a": ["3", 1]}));
    }

    #[test]
    fn missing_references_and_syntax_errors_are_reported() {
        let x = Expressions::default();
        let ctx = json!({"input": {}});
        assert!(x.eval("input.nope.deeper", &ctx).unwrap_err().contains("expression failed"));
        assert!(x.eval("input.(", &ctx).unwrap_err().contains("invalid expression"));
        assert!(x.render("{{ nodes.x }}", &ctx).is_err());
    }

    #[test]
    fn runaway_loops_run_out_of_fuel() {
        let x = Expressions::default();
        let err = x.render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", &json!({}));
        assert!(err.is_err());
    }
}
