//! Whether a new edge may be drawn, and if not, why — checked while the user drags, so a cycle
//! is refused before it exists rather than reported after saving.

use std::collections::{HashMap, VecDeque};
use trellis_model::Definition;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    SelfLoop(String),
    Duplicate {
        from: String,
        to: String,
    },
    UnknownNode(String),
    /// The node ids of the cycle the edge would close, starting and ending at the edge's source.
    Cycle(Vec<String>),
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::SelfLoop(id) => format!("`{id}` cannot lead to itself."),
            Refusal::Duplicate { from, to } => format!("There is already an edge from `{from}` to `{to}`."),
            Refusal::UnknownNode(id) => format!("No node has the id `{id}`."),
            Refusal::Cycle(path) => format!("That would make a cycle: {}.", path.join(" → ")),
        }
    }

    /// The nodes to point at while the refusal is shown.
    pub fn nodes(&self) -> Vec<String> {
        match self {
            Refusal::SelfLoop(id) | Refusal::UnknownNode(id) => vec![id.clone()],
            Refusal::Duplicate { from, to } => vec![from.clone(), to.clone()],
            Refusal::Cycle(path) => path.clone(),
        }
    }
}

/// Checks an edge `from → to` against the definition's nodes and edges.
pub fn check(def: &Definition, from: &str, to: &str) -> Result<(), Refusal> {
    for id in [from, to] {
        if !def.nodes.iter().any(|n| n.id == id) {
            return Err(Refusal::UnknownNode(id.to_owned()));
        }
    }
    if from == to {
        return Err(Refusal::SelfLoop(from.to_owned()));
    }
    if def.edges.iter().any(|e| e.from == from && e.to == to) {
        return Err(Refusal::Duplicate { from: from.to_owned(), to: to.to_owned() });
    }
    match path(def, to, from) {
        Some(back) => {
            let mut cycle = vec![from.to_owned()];
            cycle.extend(back);
            Err(Refusal::Cycle(cycle))
        }
        None => Ok(()),
    }
}

/// The shortest path of node ids from `start` to `goal` along existing edges, both ends included.
fn path(def: &Definition, start: &str, goal: &str) -> Option<Vec<String>> {
    let mut out: HashMap<&str, Vec<&str>> = HashMap::new();
    for e in &def.edges {
        out.entry(e.from.as_str()).or_default().push(e.to.as_str());
    }
    let mut parent: HashMap<&str, &str> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    let mut seen = std::collections::HashSet::from([start]);
    while let Some(at) = queue.pop_front() {
        if at == goal {
            let mut path = vec![at.to_owned()];
            let mut cur = at;
            while let Some(&p) = parent.get(cur) {
                path.push(p.to_owned());
                cur = p;
            }
            path.reverse();
            return Some(path);
        }
        for &next in out.get(at).into_iter().flatten() {
            if seen.insert(next) {
                parent.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designer::noop_graph as def;

    #[test]
    fn a_forward_edge_is_allowed() {
        let d = def(&["a", "b", "c"], &[("a", "b")]);
        assert_eq!(check(&d, "b", "c"), Ok(()));
        assert_eq!(check(&d, "a", "c"), Ok(()));
    }

    #[test]
    fn closing_a_cycle_names_it_in_order() {
        let d = def(&["a", "b", "c"], &[("a", "b"), ("b", "c")]);
        let refusal = check(&d, "c", "a").unwrap_err();
        assert_eq!(refusal, Refusal::Cycle(vec!["c".into(), "a".into(), "b".into(), "c".into()]));
        assert_eq!(refusal.message(), "That would make a cycle: c → a → b → c.");
    }

    #[test]
    fn self_loops_duplicates_and_unknown_nodes_are_refused() {
        let d = def(&["a", "b"], &[("a", "b")]);
        assert_eq!(check(&d, "a", "a"), Err(Refusal::SelfLoop("a".into())));
        assert!(matches!(check(&d, "a", "b"), Err(Refusal::Duplicate { .. })));
        assert_eq!(check(&d, "a", "zz"), Err(Refusal::UnknownNode("zz".into())));
        assert!(check(&d, "b", "a").unwrap_err().message().contains("b → a → b"));
    }
}
