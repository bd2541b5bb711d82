//! The side panel's forms as data: which fields each node type has, how a field's text is read
//! from and written into the node's JSON, and what is wrong with text that cannot be stored.

use serde_json::{Map, Value};
use trellis_model::config::NodeKind;
pub use trellis_model::node_types::FieldKind;
use trellis_model::{Node, Settings};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Dotted path inside the node (or the settings), e.g. `config.url`; inside a nested node
    /// (a map's inner node) it is relative to that node and `prefix` says where the node is.
    pub path: &'static str,
    /// Where the node the path is relative to sits in the edited node (`config.node.`), or `""`.
    pub prefix: &'static str,
    pub label: &'static str,
    pub kind: FieldKind,
    pub hint: &'static str,
}

const fn field(path: &'static str, label: &'static str, kind: FieldKind, hint: &'static str) -> Field {
    Field { path, prefix: "", kind, label, hint }
}

impl Field {
    /// The field of a nested node: `config.url` of a map's inner node is `config.node.config.url`.
    pub const fn under(self, prefix: &'static str) -> Field {
        Field { prefix, ..self }
    }

    /// The full dotted path inside the edited node: where the value is and where the
    /// validator's problems name it.
    pub fn at(&self) -> String {
        format!("{}{}", self.prefix, self.path)
    }
}

/// The configuration fields of a node type, in display order (its row of the node-type table).
pub fn config_fields(kind: NodeKind) -> Vec<Field> {
    kind.spec().fields.iter().map(|f| field(f.path, f.label, f.input, f.hint)).collect()
}

/// Fields every node has besides its id.
pub fn common_fields() -> Vec<Field> {
    use FieldKind::*;
    vec![
        field("name", "Name", Text, "Shown on the canvas."),
        field("timeout_ms", "Timeout (ms)", Number, "Empty: no timeout."),
        field("retry.max_attempts", "Max attempts", Number, "Including the first; empty: no retry."),
        field("retry.backoff_ms", "Backoff (ms)", Number, "First retry delay, doubling."),
        field("retry.max_backoff_ms", "Max backoff (ms)", Number, ""),
    ]
}

/// The shared limit a node's attempts are held to, for the node types that take one.
pub fn limit_field() -> Field {
    field(
        "limit",
        "Shared limit",
        FieldKind::Text,
        "The name of a limit on the Limits page: its attempts (a map's items) wait for room; empty: none.",
    )
}

pub const ON_LIMIT: [&str; 3] = ["queue", "reject", "replace"];

/// The workflow settings form; paths are relative to `settings`.
pub fn settings_fields() -> Vec<Field> {
    use FieldKind::*;
    vec![
        field("max_concurrent_instances", "Max concurrent instances", Number, "Empty: no limit."),
        field(
            "on_limit",
            "At the limit",
            Select(&ON_LIMIT),
            "Of either limit: queue new starts, reject them, or cancel the oldest running one.",
        ),
        field("concurrency_key", "Concurrency key", Text, "Expression over the input, e.g. input.customer_id."),
        field("max_per_key", "Max per key", Number, "Instances per key value at once; empty: 1."),
        field(
            "throttle.limit",
            "Throttle: starts",
            Number,
            "At most this many start per period; the rest wait, in order.",
        ),
        field("throttle.period_ms", "Throttle period (ms)", Number, "1000 for per second; empty: 1000."),
        field("throttle.key", "Throttle key", Text, "Expression over the input; each value has its own windows."),
        field(
            "rate_limit.limit",
            "Rate limit: starts",
            Number,
            "At most this many accepted per period; the rest get 429.",
        ),
        field("rate_limit.period_ms", "Rate limit period (ms)", Number, "60000 for per minute; empty: 1000."),
        field("rate_limit.key", "Rate limit key", Text, "Expression over the input; each value has its own windows."),
        field(
            "debounce.period_ms",
            "Debounce (ms)",
            Number,
            "Starts of one key this close make one instance, with the last input.",
        ),
        field(
            "debounce.max_wait_ms",
            "Debounce at most (ms)",
            Number,
            "Start a burst's instance at the latest this long after its first start.",
        ),
        field("debounce.key", "Debounce key", Text, "Expression over the input; each value gathers its own bursts."),
        field("priority", "Priority", Text, "1 to 5 (5 first) or an expression, e.g. input.tier; empty: 3."),
        field("max_parallel_nodes", "Max parallel nodes", Number, "Per instance; empty: no limit."),
        field("timeout_ms", "Instance timeout (ms)", Number, "Empty: no timeout."),
        field(
            "on_failure.workflow",
            "On failure, start",
            Workflow,
            "Once per failed or timed-out run, with the failed instance as its input.",
        ),
        field("on_failure.version", "Handler version", Version, "latest (when it starts) or a number; empty: latest."),
        field(
            "input_schema",
            "Input schema (JSON Schema)",
            Json,
            "Every start's input must match it; the Run dialog shows it as a form. Empty: any input.",
        ),
    ]
}

/// The text a field shows for `value` at `path`.
pub fn read(value: &Value, path: &str) -> String {
    let mut at = value;
    for key in path.split('.') {
        match at.get(key) {
            Some(v) => at = v,
            None => return String::new(),
        }
    }
    match at {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
        }
        other => other.to_string(),
    }
}

/// Parses a field's text: `Ok(None)` clears the field.
pub fn parse(kind: FieldKind, text: &str) -> Result<Option<Value>, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    match kind {
        FieldKind::Text | FieldKind::Expression | FieldKind::Select(_) | FieldKind::Code | FieldKind::Workflow => {
            Ok(Some(Value::String(text.to_owned())))
        }
        FieldKind::Toggle => match trimmed {
            "true" => Ok(Some(Value::Bool(true))),
            "false" => Ok(Some(Value::Bool(false))),
            _ => Err("Choose true or false.".to_owned()),
        },
        FieldKind::Version if trimmed == "latest" => Ok(Some(Value::String("latest".to_owned()))),
        FieldKind::Version => match trimmed.parse::<u64>() {
            Ok(n) if n >= 1 => Ok(Some(Value::from(n))),
            _ => Err("Enter latest or a version number (1 or more).".to_owned()),
        },
        FieldKind::Number => trimmed
            .parse::<u64>()
            .map(|n| Some(Value::from(n)))
            .map_err(|_| "Enter a whole number, 0 or more.".to_owned()),
        FieldKind::Json => serde_json::from_str(trimmed).map(Some).map_err(|e| format!("Not valid JSON: {e}")),
        FieldKind::List => {
            Ok(Some(Value::Array(trimmed.split(',').map(|s| Value::String(s.trim().to_owned())).collect())))
        }
    }
}

/// Sets (or with `None` removes) the value at a dotted path, creating objects on the way and
/// dropping objects that become empty.
pub fn write(root: &mut Value, path: &str, new: Option<Value>) {
    let keys: Vec<&str> = path.split('.').collect();
    write_at(root, &keys, new);
}

fn write_at(at: &mut Value, keys: &[&str], new: Option<Value>) {
    if !at.is_object() {
        *at = Value::Object(Map::new());
    }
    let map = at.as_object_mut().expect("made an object above");
    let (first, rest) = keys.split_first().expect("paths are not empty");
    if rest.is_empty() {
        match new {
            Some(v) => {
                map.insert((*first).to_owned(), v);
            }
            None => {
                map.remove(*first);
            }
        }
        return;
    }
    let child = map.entry((*first).to_owned()).or_insert_with(|| Value::Object(Map::new()));
    write_at(child, rest, new);
    if child.as_object().is_some_and(Map::is_empty) {
        map.remove(*first);
    }
}

/// The node with one field changed from the panel's text.
pub fn edit_node(node: &Node, field: &Field, text: &str) -> Result<Node, String> {
    let new = parse(field.kind, text)?;
    let mut json = serde_json::to_value(node).map_err(|e| e.to_string())?;
    write(&mut json, &field.at(), new);
    if let Some(retry) = json.get_mut("retry").and_then(Value::as_object_mut) {
        if !retry.contains_key("max_attempts") {
            if field.path == "retry.max_attempts" {
                // Clearing the attempts turns retrying off altogether.
                json.as_object_mut().expect("a node is an object").remove("retry");
            } else {
                return Err("Set “Max attempts” first.".to_owned());
            }
        }
    }
    if json.get("config").is_none() {
        json["config"] = Value::Object(Map::new());
    }
    serde_json::from_value(json).map_err(|e| format!("Not accepted: {e}"))
}

/// The settings with one field changed from the panel's text.
pub fn edit_settings(settings: &Settings, field: &Field, text: &str) -> Result<Settings, String> {
    let mut new = parse(field.kind, text)?;
    // A priority is a level or an expression: a whole number is the level itself.
    if let (true, Ok(level)) = (field.path == "priority", text.trim().parse::<i64>()) {
        new = Some(Value::from(level));
    }
    let mut json = serde_json::to_value(settings).map_err(|e| e.to_string())?;
    let clears_handler = field.path == "on_failure.workflow" && new.is_none();
    write(&mut json, field.path, new);
    if clears_handler {
        // No handler workflow: its version means nothing either.
        write(&mut json, "on_failure", None);
    }
    complete_window(&mut json, field.path)?;
    serde_json::from_value(json).map_err(|e| format!("Not accepted: {e}"))
}

/// The period a throttle or rate limit gets when only its limit is given.
const DEFAULT_PERIOD_MS: u64 = 1_000;

/// A window (`throttle`, `rate_limit`, `debounce`) is whole or absent: its limit (a debounce's
/// period) set first — a limit brings the default period —, clearing it removes the window, and
/// its other fields wait for it.
fn complete_window(json: &mut Value, path: &str) -> Result<(), String> {
    let Some((window, part)) = path.split_once('.') else { return Ok(()) };
    // The field a window cannot be without, and what to say when another is set first.
    let (required, first) = match window {
        "throttle" | "rate_limit" => ("limit", "Set the number of starts first."),
        "debounce" => ("period_ms", "Set the debounce period first."),
        _ => return Ok(()),
    };
    let Some(object) = json.get_mut(window).and_then(Value::as_object_mut) else { return Ok(()) };
    if !object.contains_key(required) {
        if part == required {
            json.as_object_mut().expect("settings are an object").remove(window);
            return Ok(());
        }
        return Err(first.to_owned());
    }
    if required == "limit" {
        object.entry("period_ms").or_insert(Value::from(DEFAULT_PERIOD_MS));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn http() -> Node {
        Node::new("fetch", "http").with_config(json!({"method": "GET", "url": "https://x"}))
    }

    fn find(fields: &[Field], path: &str) -> Field {
        *fields.iter().find(|f| f.path == path).unwrap()
    }

    #[test]
    fn every_type_has_its_form() {
        assert!(config_fields(NodeKind::Noop).is_empty());
        assert_eq!(config_fields(NodeKind::Http).len(), 4);
        assert_eq!(config_fields(NodeKind::Transform)[0].kind, FieldKind::Expression);
        for kind in NodeKind::ALL {
            for f in config_fields(kind) {
                assert!(f.path.starts_with("config."));
            }
        }
    }

    #[test]
    fn fields_read_as_text() {
        let json = serde_json::to_value(http()).unwrap();
        assert_eq!(read(&json, "config.url"), "https://x");
        assert_eq!(read(&json, "config.body"), "");
        assert_eq!(read(&json!({"config": {"outcomes": ["a", "b"]}}), "config.outcomes"), "a, b");
        assert_eq!(read(&json!({"timeout_ms": 30}), "timeout_ms"), "30");
        assert_eq!(read(&json!({"config": {"headers": {"a": "b"}}}), "config.headers"), r#"{"a":"b"}"#);
    }

    #[test]
    fn text_parses_per_kind_and_empty_clears() {
        assert_eq!(parse(FieldKind::Number, " 42 "), Ok(Some(json!(42))));
        assert!(parse(FieldKind::Number, "-1").is_err());
        assert!(parse(FieldKind::Number, "1.5").is_err());
        assert_eq!(parse(FieldKind::Number, "  "), Ok(None));
        assert_eq!(parse(FieldKind::Json, r#"{"a":1}"#), Ok(Some(json!({"a": 1}))));
        assert!(parse(FieldKind::Json, "{a").unwrap_err().starts_with("Not valid JSON"));
        assert_eq!(parse(FieldKind::List, "yes, no"), Ok(Some(json!(["yes", "no"]))));
        assert_eq!(parse(FieldKind::Version, "latest"), Ok(Some(json!("latest"))));
        assert_eq!(parse(FieldKind::Version, " 3 "), Ok(Some(json!(3))));
        assert!(parse(FieldKind::Version, "0").is_err());
        assert!(parse(FieldKind::Version, "newest").is_err());
    }

    #[test]
    fn a_subworkflow_form_picks_a_workflow_a_version_and_an_input() {
        let fields = config_fields(NodeKind::Subworkflow);
        let node = Node::new("sub", "subworkflow");
        let id = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
        let node = edit_node(&node, &find(&fields, "config.workflow"), id).unwrap();
        let node = edit_node(&node, &find(&fields, "config.version"), "2").unwrap();
        let node = edit_node(&node, &find(&fields, "config.input"), "{'n': input.n}").unwrap();
        assert_eq!(node.config, json!({"workflow": id, "version": 2, "input": "{'n': input.n}"}));
        assert!(trellis_model::config::check_config(NodeKind::Subworkflow, &node.config).is_empty());
    }

    #[test]
    fn editing_config_fields_changes_only_that_field() {
        let fields = config_fields(NodeKind::Http);
        let node = edit_node(&http(), &find(&fields, "config.url"), "https://y/{{ input.id }}").unwrap();
        assert_eq!(node.config, json!({"method": "GET", "url": "https://y/{{ input.id }}"}));
        let node = edit_node(&node, &find(&fields, "config.headers"), r#"{"a":"b"}"#).unwrap();
        assert_eq!(node.config["headers"], json!({"a": "b"}));
        let node = edit_node(&node, &find(&fields, "config.headers"), "").unwrap();
        assert!(node.config.get("headers").is_none());
    }

    #[test]
    fn retry_and_timeout_fields() {
        let common = common_fields();
        assert!(edit_node(&http(), &find(&common, "retry.backoff_ms"), "100").is_err());
        let node = edit_node(&http(), &find(&common, "retry.max_attempts"), "3").unwrap();
        assert_eq!(node.retry.as_ref().unwrap().max_attempts, 3);
        let node = edit_node(&node, &find(&common, "retry.backoff_ms"), "250").unwrap();
        assert_eq!(node.retry.as_ref().unwrap().backoff_ms, 250);
        let node = edit_node(&node, &find(&common, "retry.max_attempts"), "").unwrap();
        assert_eq!(node.retry, None);
        let node = edit_node(&node, &find(&common, "timeout_ms"), "5000").unwrap();
        assert_eq!(node.timeout_ms, Some(5000));
        let node = edit_node(&node, &find(&common, "name"), "Fetch user").unwrap();
        assert_eq!(node.name.as_deref(), Some("Fetch user"));
    }

    #[test]
    fn clearing_the_last_config_field_leaves_an_empty_config() {
        let node = Node::new("t", "transform").with_config(json!({"expression": "1"}));
        let f = config_fields(NodeKind::Transform)[0];
        assert_eq!(edit_node(&node, &f, "").unwrap().config, json!({}));
    }

    #[test]
    fn settings_fields_edit_the_settings() {
        let fields = settings_fields();
        let s = edit_settings(&Settings::default(), &find(&fields, "max_concurrent_instances"), "5").unwrap();
        assert_eq!(s.max_concurrent_instances, Some(5));
        let s = edit_settings(&s, &find(&fields, "on_limit"), "reject").unwrap();
        assert_eq!(s.on_limit, trellis_model::OnLimit::Reject);
        assert!(edit_settings(&s, &find(&fields, "on_limit"), "explode").is_err());
        // A window is whole or absent: the limit brings a period, clearing it removes the window.
        assert!(edit_settings(&s, &find(&fields, "throttle.period_ms"), "500").is_err());
        let t = edit_settings(&s, &find(&fields, "throttle.limit"), "5").unwrap();
        assert_eq!(t.throttle.as_ref().map(|w| (w.limit, w.period_ms)), Some((5, 1000)));
        let t = edit_settings(&t, &find(&fields, "throttle.key"), "input.customer").unwrap();
        assert_eq!(t.throttle.as_ref().and_then(|w| w.key.as_deref()), Some("input.customer"));
        assert_eq!(edit_settings(&t, &find(&fields, "throttle.limit"), "").unwrap().throttle, None);
        assert!(edit_settings(&s, &find(&fields, "debounce.key"), "input.k").is_err());
        let d = edit_settings(&s, &find(&fields, "debounce.period_ms"), "500").unwrap();
        assert_eq!(d.debounce.as_ref().map(|d| d.period_ms), Some(500));
        use trellis_model::flow::Priority;
        let p = edit_settings(&s, &find(&fields, "priority"), "5").unwrap();
        assert_eq!(p.priority, Some(Priority::Level(5)));
        let p = edit_settings(&s, &find(&fields, "priority"), "input.tier").unwrap();
        assert_eq!(p.priority, Some(Priority::Expression("input.tier".into())));
        let s = edit_settings(&s, &find(&fields, "max_concurrent_instances"), "").unwrap();
        let id = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
        let handled = edit_settings(&s, &find(&fields, "on_failure.workflow"), id).unwrap();
        let pinned = edit_settings(&handled, &find(&fields, "on_failure.version"), "3").unwrap();
        let handler = pinned.on_failure.clone().unwrap();
        assert_eq!((handler.workflow.as_str(), handler.version), (id, trellis_model::config::VersionRef::Pinned(3)));
        assert_eq!(edit_settings(&pinned, &find(&fields, "on_failure.workflow"), "").unwrap().on_failure, None);
        assert_eq!(s.max_concurrent_instances, None);
        let s = edit_settings(&s, &find(&fields, "concurrency_key"), "input.customer_id").unwrap();
        let s = edit_settings(&s, &find(&fields, "max_per_key"), "2").unwrap();
        assert_eq!((s.concurrency_key.as_deref(), s.max_per_key), (Some("input.customer_id"), Some(2)));
    }
}
