use super::*;
use serde_json::json;

fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["customer", "plan"],
        "properties": {
            "customer": {"type": "object", "title": "Customer", "required": ["email"], "properties": {
                "email": {"type": "string", "format": "email", "description": "Where receipts go"},
                "vip": {"type": "boolean", "default": false}
            }},
            "plan": {"enum": ["basic", "pro"], "default": "basic"},
            "seats": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
            "extra": {"oneOf": [{"type": "string"}, {"type": "number"}]}
        }
    })
}

fn child<'a>(f: &'a FormField, key: &str) -> &'a FormField {
    let Kind::Object(fields) = &f.kind else { panic!("{} is not an object", f.key) };
    fields.iter().find(|c| c.key == key).unwrap()
}

#[test]
fn the_schema_reads_as_fields_with_their_marks() {
    let root = form(&schema()).unwrap();
    let customer = child(&root, "customer");
    assert!(customer.required && customer.label == "Customer");
    let email = child(customer, "email");
    assert_eq!(email.kind, Kind::Text { format: Some("email".into()) });
    assert!(email.required);
    assert_eq!(email.description.as_deref(), Some("Where receipts go"));
    assert_eq!(child(customer, "vip").kind, Kind::Boolean);
    assert_eq!(child(&root, "plan").kind, Kind::Choice(vec![json!("basic"), json!("pro")]));
    assert_eq!(child(&root, "seats").kind, Kind::Integer);
    assert!(!child(&root, "seats").required);
    assert!(matches!(&child(&root, "tags").kind, Kind::Array(item) if matches!(item.kind, Kind::Text { .. })));
    assert_eq!(child(&root, "extra").kind, Kind::Json, "what a form cannot show is typed as JSON");
}

#[test]
fn only_an_object_with_properties_makes_a_form() {
    assert!(form(&json!(true)).is_none());
    assert!(form(&json!({"type": "string"})).is_none());
    assert!(form(&json!({"type": "object"})).is_none());
    assert!(form(&json!({"type": ["object", "null"], "properties": {"a": {"type": "string"}}})).is_some());
}

#[test]
fn defaults_are_prefilled_and_required_objects_made() {
    let input = initial(&form(&schema()).unwrap());
    assert_eq!(input, json!({"customer": {"vip": false}, "plan": "basic"}));
}

#[test]
fn text_becomes_json_at_its_place_and_back() {
    let mut input = json!({});
    set(&mut input, "/customer/email", value_of(&Kind::Text { format: None }, "a@b.c"));
    set(&mut input, "/seats", value_of(&Kind::Integer, "3"));
    set(&mut input, "/plan", value_of(&Kind::Choice(vec![json!("basic"), json!(2)]), "2"));
    set(&mut input, "/extra", value_of(&Kind::Json, "[1, 2]"));
    assert_eq!(input, json!({"customer": {"email": "a@b.c"}, "seats": 3, "plan": 2, "extra": [1, 2]}));
    assert_eq!(value_of(&Kind::Integer, "3.5"), Some(json!("3.5")), "kept as typed; the server names it");
    assert_eq!(value_of(&Kind::Number, "2.5"), Some(json!(2.5)));
    set(&mut input, "/seats", value_of(&Kind::Integer, ""));
    assert!(input.get("seats").is_none(), "emptied is left out");
    assert_eq!(text_of(&Kind::Integer, input.pointer("/extra/0")), "1");
    assert_eq!(text_of(&Kind::Json, input.pointer("/extra")), "[1,2]");
    assert_eq!(text_of(&Kind::Integer, None), "");
}

#[test]
fn rows_of_an_array_are_set_and_removed() {
    let mut input = json!({"tags": ["a", "b", "c"]});
    set(&mut input, "/tags/1", Some(json!("B")));
    set(&mut input, "/tags/0", None);
    assert_eq!(input, json!({"tags": ["B", "c"]}));
    set(&mut input, "/tags/9", Some(json!("x")));
    assert_eq!(input, json!({"tags": ["B", "c"]}), "no such row: nothing");
    let rows = pointers(&form(&schema()).unwrap(), &input);
    assert!(rows.contains(&"/tags/1".to_owned()) && !rows.contains(&"/tags/2".to_owned()), "{rows:?}");
}

#[test]
fn keys_with_slashes_are_escaped() {
    let mut input = json!({});
    let at = child_pointer("", "a/b~c");
    assert_eq!(at, "/a~1b~0c");
    set(&mut input, &at, Some(json!(1)));
    assert_eq!(input, json!({"a/b~c": 1}));
}

#[test]
fn violations_point_at_the_field_they_concern() {
    assert_eq!(violation_target("/order/id", r#"/order/id: "abc" is not of type "integer""#), "/order/id");
    assert_eq!(violation_target("/order", r#"/order: "id" is a required property"#), "/order/id");
    assert_eq!(violation_target("", r#"/: "order" is a required property"#), "/order");
    assert_eq!(violation_target("", "/: false schema does not allow 1"), "");
    assert_eq!(without_path("/order", r#"/order: "id" is a required property"#), r#""id" is a required property"#);
    assert_eq!(without_path("", "/: false schema does not allow 1"), "false schema does not allow 1");
}

#[test]
fn formats_choose_the_control() {
    assert_eq!(input_type(&Kind::Text { format: Some("date".into()) }), "date");
    assert_eq!(input_type(&Kind::Text { format: Some("email".into()) }), "email");
    assert_eq!(input_type(&Kind::Integer), "number");
    assert_eq!(input_type(&Kind::Text { format: None }), "text");
}
