//! An example of what an input schema describes: each default, else a value of the field's
//! type. The webhook's signed test delivery sends one, and the designer's previews start from
//! one, so what they show is a run the schema would accept.

use crate::run_form::{self, FormField, Kind};
use serde_json::{json, Map, Value};

/// An input `schema` accepts, or `None` when the Run form cannot draw it (no object with
/// properties at its root).
pub fn example(schema: &Value) -> Option<Value> {
    run_form::form(schema).map(|root| example_of(&root))
}

fn example_of(field: &FormField) -> Value {
    if let Some(default) = &field.default {
        return default.clone();
    }
    match &field.kind {
        Kind::Choice(options) => options.first().cloned().unwrap_or(Value::Null),
        Kind::Text { format } => json!(match format.as_deref() {
            Some("date-time") => "2026-01-01T09:00:00Z",
            Some("date") => "2026-01-01",
            Some("email") => "someone@example.com",
            Some("uri") => "https://example.com/",
            _ => "text",
        }),
        Kind::Number | Kind::Integer => json!(1),
        Kind::Boolean => json!(false),
        Kind::Object(fields) => {
            Value::Object(fields.iter().map(|f| (f.key.clone(), example_of(f))).collect::<Map<_, _>>())
        }
        Kind::Array(item) => json!([example_of(item)]),
        Kind::Json => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_field_gets_its_default_or_a_value_of_its_type() {
        let schema = json!({"type": "object", "required": ["order"], "properties": {
            "order": {"type": "integer"}, "email": {"type": "string", "format": "email"},
            "tier": {"enum": ["gold", "silver"]}, "note": {"type": "string", "default": "it's"},
            "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}}}}}});
        let expected = json!({"order": 1, "email": "someone@example.com", "tier": "gold", "note": "it's",
            "lines": [{"sku": "text"}]});
        assert_eq!(example(&schema), Some(expected));
        assert_eq!(example(&json!({"type": "string"})), None, "no form: no example");
    }
}
