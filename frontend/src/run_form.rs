//! The Run dialog's form, built from a workflow's `input_schema`: which fields it has (the
//! schema read as a tree), how a field's text becomes JSON at its place in the input, and which
//! field a server-side violation belongs to. The form's state is the input itself (one JSON
//! value), so switching to the raw JSON box and back keeps every value.
//!
//! Only what a form can show is read (`type`, `properties`, `required`, `items`, `enum`,
//! `default`, `title`, `description`, `format`); anything else (`oneOf`, `$ref`, a property
//! without a `type`) is a JSON field typed by hand. The server checks the whole schema.

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `format` is a hint for the control (`date`, `date-time`, `email`).
    Text {
        format: Option<String>,
    },
    /// A value among `enum` (a select).
    Choice(Vec<Value>),
    Number,
    Integer,
    Boolean,
    Object(Vec<FormField>),
    /// Rows of the item field; its `key` is unused.
    Array(Box<FormField>),
    /// Any JSON, typed by hand.
    Json,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The property name (empty for the root and array items).
    pub key: String,
    pub label: String,
    pub description: Option<String>,
    pub required: bool,
    pub default: Option<Value>,
    pub kind: Kind,
}

/// Deeper schemas become JSON fields: a bound on the form, not a rule of the schema.
const MAX_DEPTH: usize = 8;

/// The form for `schema`: its root is an object with properties, else there is none (the JSON
/// box alone).
pub fn form(schema: &Value) -> Option<FormField> {
    let root = field("", schema, false, 0);
    matches!(&root.kind, Kind::Object(fields) if !fields.is_empty()).then_some(root)
}

fn field(key: &str, schema: &Value, required: bool, depth: usize) -> FormField {
    let text = |k: &str| schema.get(k).and_then(Value::as_str).map(str::to_owned);
    FormField {
        key: key.to_owned(),
        label: text("title").unwrap_or_else(|| key.to_owned()),
        description: text("description"),
        required,
        default: schema.get("default").cloned(),
        kind: kind(schema, depth),
    }
}

fn kind(schema: &Value, depth: usize) -> Kind {
    if let Some(Value::Array(options)) = schema.get("enum") {
        return Kind::Choice(options.clone());
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        // `["string", "null"]`: the one that is not null.
        Some(Value::Array(types)) => {
            match types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect::<Vec<_>>()[..] {
                [one] => one,
                _ => return Kind::Json,
            }
        }
        _ => return Kind::Json,
    };
    match ty {
        "string" => Kind::Text { format: schema.get("format").and_then(Value::as_str).map(str::to_owned) },
        "number" => Kind::Number,
        "integer" => Kind::Integer,
        "boolean" => Kind::Boolean,
        "object" if depth < MAX_DEPTH => {
            let Some(Value::Object(properties)) = schema.get("properties") else { return Kind::Json };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            Kind::Object(
                properties.iter().map(|(k, s)| field(k, s, required.contains(&k.as_str()), depth + 1)).collect(),
            )
        }
        "array" if depth < MAX_DEPTH => match schema.get("items") {
            Some(items @ Value::Object(_)) => Kind::Array(Box::new(field("", items, false, depth + 1))),
            _ => Kind::Json,
        },
        _ => Kind::Json,
    }
}

/// The input a new form starts with: each default, and an object for each nested object.
pub fn initial(root: &FormField) -> Value {
    let mut input = Value::Object(Map::new());
    fill_defaults(root, "", &mut input);
    input
}

fn fill_defaults(f: &FormField, at: &str, input: &mut Value) {
    if let Some(default) = &f.default {
        set(input, at, Some(default.clone()));
        return;
    }
    if let Kind::Object(fields) = &f.kind {
        if !at.is_empty() && f.required {
            set(input, at, Some(Value::Object(Map::new())));
        }
        for child in fields {
            fill_defaults(child, &child_pointer(at, &child.key), input);
        }
    }
}

/// The JSON Pointer of `key` inside `base` (`~` and `/` escaped).
pub fn child_pointer(base: &str, key: &str) -> String {
    format!("{base}/{}", key.replace('~', "~0").replace('/', "~1"))
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Sets (or with `None` removes) the value at `pointer`, making the objects on the way.
pub fn set(input: &mut Value, pointer: &str, value: Option<Value>) {
    if pointer.is_empty() {
        *input = value.unwrap_or(Value::Null);
        return;
    }
    let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    if value.is_none() && input.pointer(parent).is_none() {
        return;
    }
    let mut at = input;
    for token in parent.split('/').skip(1).map(unescape) {
        if let Value::Array(items) = at {
            let Some(item) = token.parse::<usize>().ok().and_then(|i| items.get_mut(i)) else { return };
            at = item;
            continue;
        }
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        at = at.as_object_mut().expect("an object").entry(token).or_insert_with(|| Value::Object(Map::new()));
    }
    let last = unescape(last);
    match (at, value) {
        (Value::Array(items), value) => match (last.parse::<usize>().ok().filter(|i| *i < items.len()), value) {
            (Some(i), Some(v)) => items[i] = v,
            (Some(i), None) => {
                items.remove(i);
            }
            (None, _) => {}
        },
        (Value::Object(map), Some(v)) => {
            map.insert(last, v);
        }
        (Value::Object(map), None) => {
            map.remove(&last);
        }
        (other, Some(v)) => *other = Value::Object(Map::from_iter([(last, v)])),
        (_, None) => {}
    }
}

/// What a text control shows for the value.
pub fn text_of(kind: &Kind, value: Option<&Value>) -> String {
    match (kind, value) {
        (_, None | Some(Value::Null)) => String::new(),
        (Kind::Json, Some(v)) => v.to_string(),
        (_, Some(Value::String(s))) => s.clone(),
        (_, Some(v)) => v.to_string(),
    }
}

/// The value typed text stands for: `None` (left out) when empty. Text that is not a number in
/// a number field is kept as text, so nothing typed is lost and the server names the field.
pub fn value_of(kind: &Kind, text: &str) -> Option<Value> {
    if text.is_empty() {
        return None;
    }
    Some(match kind {
        Kind::Integer => text.trim().parse::<i64>().map(Value::from).unwrap_or_else(|_| text.into()),
        Kind::Number => {
            serde_json::from_str::<serde_json::Number>(text.trim()).map(Value::Number).unwrap_or_else(|_| text.into())
        }
        Kind::Json => serde_json::from_str(text).unwrap_or_else(|_| text.into()),
        Kind::Choice(options) => {
            options.iter().find(|o| text_of(kind, Some(o)) == text).cloned().unwrap_or_else(|| text.into())
        }
        _ => Value::String(text.to_owned()),
    })
}

/// The HTML input type of a text field.
pub fn input_type(kind: &Kind) -> &'static str {
    match kind {
        Kind::Number | Kind::Integer => "number",
        Kind::Text { format: Some(f) } => match f.as_str() {
            "date" => "date",
            "date-time" => "datetime-local",
            "email" => "email",
            "uri" => "url",
            _ => "text",
        },
        _ => "text",
    }
}

/// The pointer a violation is about: where a `required` violation's object lacks the property,
/// the property itself (`/order` + `"id" is a required property` → `/order/id`).
pub fn violation_target(path: &str, message: &str) -> String {
    let said = message.strip_prefix(&format!("{}: ", if path.is_empty() { "/" } else { path })).unwrap_or(message);
    match said.strip_suffix(" is a required property").and_then(|q| serde_json::from_str::<String>(q).ok()) {
        Some(key) => child_pointer(path, &key),
        None => path.to_owned(),
    }
}

/// A violation's message without the path it starts with (shown at its field, the path is said).
pub fn without_path<'m>(path: &str, message: &'m str) -> &'m str {
    let shown = if path.is_empty() { "/" } else { path };
    message.strip_prefix(shown).and_then(|m| m.strip_prefix(": ")).unwrap_or(message)
}

/// The pointers of every field the form shows for `input` (arrays: one per row).
pub fn pointers(root: &FormField, input: &Value) -> Vec<String> {
    let mut all = Vec::new();
    collect(root, "", input, &mut all);
    all
}

fn collect(f: &FormField, at: &str, input: &Value, all: &mut Vec<String>) {
    all.push(at.to_owned());
    match &f.kind {
        Kind::Object(fields) => fields.iter().for_each(|c| collect(c, &child_pointer(at, &c.key), input, all)),
        Kind::Array(item) => {
            let rows = input.pointer(at).and_then(Value::as_array).map_or(0, Vec::len);
            (0..rows).for_each(|i| collect(item, &format!("{at}/{i}"), input, all));
        }
        _ => {}
    }
}

#[cfg(test)]
#[path = "run_form_tests.rs"]
mod tests;
