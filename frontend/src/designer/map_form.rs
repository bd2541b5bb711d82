//! A `map` node's form: what runs per item (one of the types a map may run, or a workflow), and
//! that inner node's own form, its fields moved under `config.node.` so the values and the
//! validator's problems (`config.node.config.url`) land where the inner form shows them.

use crate::designer::forms::{config_fields, Field, FieldKind};
use serde_json::{json, Value};
use trellis_model::config::NodeKind;
use trellis_model::map::may_run_inside;
use trellis_model::Node;

/// The "Run per item" choice that starts a workflow per item.
pub const WORKFLOW: &str = "workflow";
/// Where a map's inner node sits in the map node.
const INNER: &str = "config.node.";

/// What runs per item: `Some(type)` of the inner node, `Some("workflow")`, or `None` (not chosen).
pub fn per_item(config: &Value) -> Option<String> {
    if config.get("workflow").is_some() {
        return Some(WORKFLOW.to_owned());
    }
    config.get("node")?.get("type")?.as_str().map(str::to_owned)
}

/// The choices of "Run per item": each type a map may run (value, label), then a workflow.
pub fn choices() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<_> =
        NodeKind::ALL.into_iter().filter(|k| may_run_inside(*k)).map(|k| (k.as_str(), k.as_str())).collect();
    out.push((WORKFLOW, "a workflow"));
    out
}

/// The map node running `choice` per item: the other alternative goes, and an inner node of
/// another type starts with an empty config (its fields are another type's).
pub fn choose(node: &Node, choice: &str) -> Node {
    let mut node = node.clone();
    if !node.config.is_object() {
        node.config = json!({});
    }
    let config = node.config.as_object_mut().expect("made an object above");
    if choice == WORKFLOW {
        config.remove("node");
        config.entry("workflow").or_insert_with(|| json!({}));
    } else if choice.is_empty() {
        config.remove("node");
        config.remove("workflow");
    } else {
        config.remove("workflow");
        let same = config.get("node").and_then(|n| n.get("type")).and_then(Value::as_str) == Some(choice);
        if !same {
            config.insert("node".to_owned(), json!({"type": choice, "config": {}}));
        }
    }
    node
}

/// The fields of what runs per item: the inner type's own (under `config.node.`), or the
/// workflow and its version.
pub fn inner_fields(choice: &str) -> Vec<Field> {
    if choice == WORKFLOW {
        return vec![
            Field {
                path: "config.workflow.workflow",
                prefix: "",
                label: "Workflow",
                kind: FieldKind::Workflow,
                hint: "Started once per item, the item as its input; its output is the item's result.",
            },
            Field {
                path: "config.workflow.version",
                prefix: "",
                label: "Version",
                kind: FieldKind::Version,
                hint: "latest (when the map runs) or a number; empty: latest.",
            },
        ];
    }
    let kind = NodeKind::parse(choice).filter(|k| may_run_inside(*k));
    kind.map(config_fields).unwrap_or_default().into_iter().map(|f| f.under(INNER)).collect()
}

/// The paths whose problems belong on the "Run per item" select: the inner type, or neither
/// (or both) alternatives given.
pub const CHOICE_PATHS: [&str; 3] = ["config.node.type", "config.node", "config.workflow"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designer::forms::{edit_node, read};
    use trellis_model::config::check_config;

    fn map() -> Node {
        Node::new("each", "map").with_config(json!({"items": "input.orders"}))
    }

    #[test]
    fn the_choices_are_the_types_a_map_runs_and_a_workflow() {
        let values: Vec<&str> = choices().into_iter().map(|(v, _)| v).collect();
        assert!(values.contains(&"transform") && values.contains(&"http"));
        assert!(!values.contains(&"map") && !values.contains(&"wait_signal") && !values.contains(&"task"));
        assert_eq!(choices().last(), Some(&(WORKFLOW, "a workflow")));
    }

    #[test]
    fn the_inner_form_is_the_inner_types_own_under_config_node() {
        let fields = inner_fields("http");
        assert_eq!(fields.len(), config_fields(NodeKind::Http).len());
        assert!(fields.iter().all(|f| f.at().starts_with("config.node.config.")));
        assert_eq!(fields[1].at(), "config.node.config.url");
        assert!(inner_fields("map").is_empty() && inner_fields("").is_empty());
        let wf: Vec<String> = inner_fields(WORKFLOW).iter().map(Field::at).collect();
        assert_eq!(wf, ["config.workflow.workflow", "config.workflow.version"]);
    }

    #[test]
    fn a_map_over_a_transform_is_built_from_its_fields_and_validates() {
        let node = choose(&map(), "transform");
        assert_eq!(per_item(&node.config).as_deref(), Some("transform"));
        let expression = inner_fields("transform")[0];
        let node = edit_node(&node, &expression, "{'id': item.id}").unwrap();
        assert_eq!(node.config["node"], json!({"type": "transform", "config": {"expression": "{'id': item.id}"}}));
        let json = serde_json::to_value(&node).unwrap();
        assert_eq!(read(&json, &expression.at()), "{'id': item.id}");
        assert!(check_config(NodeKind::Map, &node.config).is_empty());
        assert_eq!(choose(&node, "transform"), node, "choosing the same type keeps its config");
    }

    #[test]
    fn switching_what_runs_drops_the_other_alternative() {
        let node = choose(&choose(&map(), "http"), WORKFLOW);
        assert_eq!(node.config, json!({"items": "input.orders", "workflow": {}}));
        assert_eq!(per_item(&node.config).as_deref(), Some(WORKFLOW));
        let id = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
        let node = edit_node(&node, &inner_fields(WORKFLOW)[0], id).unwrap();
        assert!(check_config(NodeKind::Map, &node.config).is_empty());
        let node = choose(&node, "noop");
        assert_eq!(node.config, json!({"items": "input.orders", "node": {"type": "noop", "config": {}}}));
        assert_eq!(per_item(&choose(&node, "").config), None);
    }

    #[test]
    fn the_validators_paths_are_the_fields_paths() {
        let node = choose(&map(), "http");
        let problems = check_config(NodeKind::Map, &node.config);
        let fields: Vec<String> = inner_fields("http").iter().map(Field::at).collect();
        assert!(!problems.is_empty());
        for p in &problems {
            assert!(fields.contains(&p.path), "{} has no field", p.path);
        }
        let unchosen = check_config(NodeKind::Map, &map().config);
        assert!(unchosen.iter().all(|p| CHOICE_PATHS.contains(&p.path.as_str())), "{unchosen:?}");
    }
}
