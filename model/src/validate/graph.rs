//! Graph-shaped checks built on petgraph: cycles, reachability, connectivity.

use super::Issue;
use crate::definition::Definition;
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::unionfind::UnionFind;
use petgraph::visit::{Bfs, EdgeRef};
use petgraph::Direction;
use std::collections::{HashMap, VecDeque};

/// The definition as a petgraph graph: one vertex per distinct node id (first occurrence),
/// one edge per edge whose ends are known and distinct (self-loops are reported elsewhere).
struct Graph<'a> {
    g: DiGraph<&'a str, ()>,
}

impl<'a> Graph<'a> {
    fn build(def: &'a Definition) -> Self {
        let mut g = DiGraph::new();
        let mut index: HashMap<&str, NodeIndex> = HashMap::new();
        for node in &def.nodes {
            index.entry(node.id.as_str()).or_insert_with(|| g.add_node(node.id.as_str()));
        }
        for edge in &def.edges {
            if let (Some(&a), Some(&b)) = (index.get(edge.from.as_str()), index.get(edge.to.as_str())) {
                if a != b && g.find_edge(a, b).is_none() {
                    g.add_edge(a, b, ());
                }
            }
        }
        Graph { g }
    }
}

/// One `cycle` error per strongly connected component with more than one node, naming a
/// concrete cycle through it in order, starting from the node defined first.
pub(super) fn cycles(def: &Definition) -> Vec<Issue> {
    let graph = Graph::build(def);
    let mut sccs: Vec<Vec<NodeIndex>> = tarjan_scc(&graph.g).into_iter().filter(|c| c.len() > 1).collect();
    for scc in &mut sccs {
        scc.sort();
    }
    sccs.sort();
    sccs.iter()
        .map(|scc| {
            let ids: Vec<String> = cycle_through(&graph.g, scc).iter().map(|&i| graph.g[i].to_owned()).collect();
            let mut shown = ids.clone();
            shown.push(ids[0].clone());
            let mut issue = Issue::new("cycle", format!("the graph has a cycle: {}", shown.join(" → "))).node(&ids[0]);
            issue.cycle = Some(ids);
            issue
        })
        .collect()
}

/// The shortest cycle from the first member of `scc` back to itself, staying inside `scc`.
fn cycle_through(g: &DiGraph<&str, ()>, scc: &[NodeIndex]) -> Vec<NodeIndex> {
    let start = scc[0];
    let inside = |i: NodeIndex| scc.binary_search(&i).is_ok();
    let mut parent: HashMap<NodeIndex, NodeIndex> = HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for next in g.neighbors_directed(at, Direction::Outgoing) {
            if next == start {
                let mut path = vec![at];
                while let Some(&p) = parent.get(path.last().unwrap()) {
                    path.push(p);
                }
                path.reverse();
                return path;
            }
            if inside(next) && next != start && !parent.contains_key(&next) {
                parent.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    // A strongly connected component always has a cycle through each member.
    scc.to_vec()
}

/// Warnings for nodes no start node leads to, and for parts of the graph that are not
/// connected to the part holding the first node.
pub(super) fn reachability_warnings(def: &Definition) -> Vec<Issue> {
    let graph = Graph::build(def);
    let g = &graph.g;
    let mut warnings = Vec::new();
    let mut reached = vec![false; g.node_count()];
    for root in g.node_indices().filter(|&i| g.edges_directed(i, Direction::Incoming).next().is_none()) {
        let mut bfs = Bfs::new(g, root);
        while let Some(i) = bfs.next(g) {
            reached[i.index()] = true;
        }
    }
    for i in g.node_indices().filter(|i| !reached[i.index()]) {
        warnings.push(
            Issue::new("unreachable", format!("node `{}` can never run: no start node leads to it", g[i])).node(g[i]),
        );
    }
    let component = weak_components(g);
    if let Some(&main) = component.first() {
        for i in g.node_indices().filter(|i| component[i.index()] != main) {
            warnings.push(
                Issue::new("disconnected", format!("node `{}` is not connected to the rest of the workflow", g[i]))
                    .node(g[i]),
            );
        }
    }
    warnings
}

/// The weakly connected component of each vertex, as a label shared by its members.
fn weak_components(g: &DiGraph<&str, ()>) -> Vec<usize> {
    let mut sets = UnionFind::new(g.node_count());
    for e in g.edge_references() {
        sets.union(e.source().index(), e.target().index());
    }
    sets.into_labeling()
}
