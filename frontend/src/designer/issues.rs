//! Validation problems placed where they belong: on nodes, on edges, on a node's fields, or on
//! the workflow as a whole. Works the same for the validator run in the browser and for the
//! `errors` of a 422 from the server.

use std::collections::BTreeMap;
use trellis_model::Issue;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placed {
    pub nodes: BTreeMap<String, Vec<String>>,
    pub edges: BTreeMap<(String, String), Vec<String>>,
    /// By node id, then the field path inside the node (`config.url`).
    pub fields: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// By the settings field (`max_parallel_nodes`).
    pub settings: BTreeMap<String, Vec<String>>,
    /// What names no node or edge.
    pub general: Vec<String>,
    /// Every problem once, in the order found: the Problems panel's list.
    pub list: Vec<Problem>,
}

/// One entry of the Problems panel: what it says and where it takes the author.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub message: String,
    /// The node it selects (the first of a cycle).
    pub node: Option<String>,
    /// The field inside that node it focuses (`config.url`), as the form's `field-…` test ids name it.
    pub field: Option<String>,
    /// The edge it selects, when it names no node.
    pub edge: Option<(String, String)>,
    /// The workflow setting it names (`max_parallel_nodes`).
    pub setting: Option<String>,
}

impl Problem {
    fn of(issue: &Issue) -> Self {
        let node = issue.node.clone().or_else(|| issue.cycle.as_ref().and_then(|c| c.first().cloned()));
        let field = issue.node.as_ref().and(issue.path.as_deref()).and_then(node_field).map(str::to_owned);
        let edge = issue.edge.as_deref().and_then(|l| l.split_once("->")).map(|(a, b)| (a.to_owned(), b.to_owned()));
        let setting = issue.path.as_deref().and_then(|p| p.strip_prefix("settings.")).map(str::to_owned);
        Problem { message: issue.message.clone(), node, field, edge, setting }
    }

    /// Where it is, as the panel names it: `node http_1 · config.url`, `edge a → b`, `settings · …`.
    pub fn place(&self) -> String {
        match (&self.node, &self.field, &self.edge, &self.setting) {
            (Some(n), Some(f), _, _) => format!("node {n} · {f}"),
            (Some(n), None, _, _) => format!("node {n}"),
            (None, _, Some((a, b)), _) => format!("edge {a} → {b}"),
            (None, _, None, Some(s)) => format!("settings · {s}"),
            _ => "workflow".to_owned(),
        }
    }

    /// The `data-testid`s of the form field it names, the path itself first and then each
    /// field holding it (`field-config.headers.X-Key`, `field-config.headers`): a problem inside
    /// a header or a body names the field the form draws.
    pub fn field_test_ids(&self) -> Vec<String> {
        let path = match (&self.node, &self.field, &self.setting) {
            (Some(_), Some(f), _) => f,
            (None, _, Some(s)) if self.edge.is_none() => s,
            _ => return Vec::new(),
        };
        field_and_holders(path).into_iter().map(|p| format!("field-{p}")).collect()
    }
}

impl Placed {
    pub fn from_issues<'a>(issues: impl IntoIterator<Item = &'a Issue>) -> Self {
        let mut out = Placed::default();
        for issue in issues {
            out.list.push(Problem::of(issue));
            let mut placed = false;
            if let Some(cycle) = &issue.cycle {
                for id in cycle {
                    out.nodes.entry(id.clone()).or_default().push(issue.message.clone());
                }
                placed = true;
            } else if let Some(id) = &issue.node {
                out.nodes.entry(id.clone()).or_default().push(issue.message.clone());
                if let Some(field) = issue.path.as_deref().and_then(node_field) {
                    out.fields
                        .entry(id.clone())
                        .or_default()
                        .entry(field.to_owned())
                        .or_default()
                        .push(issue.message.clone());
                }
                placed = true;
            }
            if let Some((from, to)) = issue.edge.as_deref().and_then(|l| l.split_once("->")) {
                out.edges.entry((from.to_owned(), to.to_owned())).or_default().push(issue.message.clone());
                placed = true;
            }
            if let Some(field) = issue.path.as_deref().and_then(|p| p.strip_prefix("settings.")) {
                out.settings.entry(field.to_owned()).or_default().push(issue.message.clone());
                placed = true;
            }
            if !placed {
                out.general.push(issue.message.clone());
            }
        }
        out
    }

    /// The problems of the form field at `path` of `node`, those inside it included
    /// (`config.headers.X-Key` is shown at `config.headers`).
    pub fn field(&self, node: &str, path: &str) -> Option<String> {
        let messages: Vec<&str> = self
            .fields
            .get(node)?
            .iter()
            .filter(|(at, _)| field_and_holders(at).contains(&path))
            .flat_map(|(_, messages)| messages.iter().map(String::as_str))
            .collect();
        (!messages.is_empty()).then(|| messages.join(" "))
    }

    pub fn count(&self) -> usize {
        self.nodes.values().map(Vec::len).sum::<usize>()
            + self.edges.values().map(Vec::len).sum::<usize>()
            + self.settings.values().map(Vec::len).sum::<usize>()
            + self.general.len()
    }
}

/// The validator's problems plus those the server listed when it refused a save, each once.
pub fn merge(local: &[Issue], server: &[Issue]) -> Vec<Issue> {
    let mut all = local.to_vec();
    for issue in server {
        if !all.iter().any(|i| i.message == issue.message && i.node == issue.node && i.edge == issue.edge) {
            all.push(issue.clone());
        }
    }
    all
}

/// `config.headers.X-Key` → `[config.headers.X-Key, config.headers, config]`; `a.b[2]` → `[a.b[2], a.b, a]`.
fn field_and_holders(path: &str) -> Vec<&str> {
    let mut out = vec![path];
    let mut rest = path;
    while let Some(cut) = rest.rfind(['.', '[']) {
        rest = &rest[..cut];
        out.push(rest);
    }
    out
}

/// `nodes[3].config.url` → `config.url`.
fn node_field(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("nodes[")?;
    let (_, field) = rest.split_once("].")?;
    Some(field)
}

/// What Save says: a draft is kept with its problems, and publishing waits for them.
pub fn saved_notice(problems: usize) -> String {
    match problems {
        0 => "Saved.".to_owned(),
        1 => "Saved, with 1 problem to fix before publishing.".to_owned(),
        n => format!("Saved, with {n} problems to fix before publishing."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use trellis_model::{validate, Definition, Limits};

    #[test]
    fn validator_problems_land_on_their_nodes_fields_and_edges() {
        let def: Definition = serde_json::from_value(json!({
            "nodes": [
                {"id": "a", "type": "http", "config": {"url": "ftp://x"}},
                {"id": "b", "type": "noop"},
                {"id": "c", "type": "noop"}
            ],
            "edges": [{"from": "a", "to": "b", "when": "yes"}, {"from": "b", "to": "c"}, {"from": "c", "to": "b"}],
            "settings": {"max_parallel_nodes": 0}
        }))
        .unwrap();
        let report = validate(&def, &Limits::default());
        let placed = Placed::from_issues(&report.errors);
        assert!(placed.field("a", "config.url").unwrap().contains("http://"));
        assert!(placed.edges.contains_key(&("a".to_owned(), "b".to_owned())));
        assert!(placed.nodes.contains_key("b") && placed.nodes.contains_key("c"), "cycle members");
        assert!(placed.settings.contains_key("max_parallel_nodes"));
        assert_eq!(placed.count(), placed.nodes.values().map(Vec::len).sum::<usize>() + 2);
    }

    #[test]
    fn a_problem_inside_a_field_is_shown_at_the_field_that_holds_it() {
        let issue = Issue::new("unknown_secret", "no secret X").node("call").path("nodes[0].config.headers.X-Key");
        let placed = Placed::from_issues([&issue]);
        assert_eq!(placed.field("call", "config.headers").as_deref(), Some("no secret X"));
        assert_eq!(placed.field("call", "config.url"), None);
        let ids = placed.list[0].field_test_ids();
        assert_eq!(ids, ["field-config.headers.X-Key", "field-config.headers", "field-config"]);
        assert_eq!(
            field_and_holders("config.body.k[0]"),
            ["config.body.k[0]", "config.body.k", "config.body", "config"]
        );
    }

    #[test]
    fn the_problem_list_names_each_problem_s_node_and_field_in_order() {
        let def: Definition = serde_json::from_value(json!({
            "nodes": [{"id": "a", "type": "http", "config": {"url": "ftp://x"}}, {"id": "b", "type": "noop"}],
            "edges": [{"from": "a", "to": "b", "when": "yes"}],
            "settings": {"max_parallel_nodes": 0}
        }))
        .unwrap();
        let report = validate(&def, &Limits::default());
        let placed = Placed::from_issues(&report.errors);
        assert_eq!(placed.list.len(), report.errors.len());
        let url = placed.list.iter().find(|p| p.field.as_deref() == Some("config.url")).expect("the url's problem");
        assert_eq!(url.node.as_deref(), Some("a"));
        assert_eq!(url.place(), "node a · config.url");
        assert_eq!(url.field_test_ids(), ["field-config.url", "field-config"]);
        let setting = placed.list.iter().find(|p| p.setting.is_some()).expect("the setting's problem");
        assert_eq!(setting.place(), "settings · max_parallel_nodes");
        assert_eq!(setting.field_test_ids(), ["field-max_parallel_nodes"]);
        let cycle = Issue { cycle: Some(vec!["b".into(), "c".into()]), ..Issue::new("cycle", "a cycle") };
        assert_eq!(Placed::from_issues([&cycle]).list[0].node.as_deref(), Some("b"), "a cycle selects its first node");
    }

    #[test]
    fn server_problems_are_added_once() {
        let a = Issue::new("invalid_config", "url is required").node("a");
        let b = Issue::new("cycle", "the graph has a cycle").node("b");
        let merged = merge(std::slice::from_ref(&a), &[a.clone(), b.clone()]);
        assert_eq!(merged, vec![a, b]);
    }

    #[test]
    fn problems_naming_nothing_are_general() {
        let report = validate(&Definition::default(), &Limits::default());
        let placed = Placed::from_issues(&report.errors);
        assert_eq!(placed.general.len(), 1);
        assert!(placed.nodes.is_empty());
    }

    #[test]
    fn save_says_whether_problems_wait_for_publishing() {
        assert_eq!(saved_notice(0), "Saved.");
        assert_eq!(saved_notice(1), "Saved, with 1 problem to fix before publishing.");
        assert_eq!(saved_notice(3), "Saved, with 3 problems to fix before publishing.");
    }
}
