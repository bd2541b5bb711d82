//! Layered left-to-right auto-layout: longest-path layering (every edge points to a later
//! column), then a few barycenter sweeps to order each column so edges cross less.

use crate::designer::geometry::{Point, NODE_H, NODE_W};
use std::collections::HashMap;
use trellis_model::Definition;

pub const COLUMN_GAP: f64 = 80.0;
pub const ROW_GAP: f64 = 40.0;
const SWEEPS: usize = 4;

/// New top-left positions for every node, by id, starting at `origin`.
pub fn layered(def: &Definition, origin: Point) -> HashMap<String, Point> {
    let ids: Vec<&str> = def.nodes.iter().map(|n| n.id.as_str()).collect();
    let index: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); ids.len()];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); ids.len()];
    for e in &def.edges {
        if let (Some(&a), Some(&b)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) {
            if a != b {
                succs[a].push(b);
                preds[b].push(a);
            }
        }
    }
    let layer = layers(&preds, &succs);
    let depth = layer.iter().copied().max().map_or(0, |m| m + 1);
    let mut columns: Vec<Vec<usize>> = vec![Vec::new(); depth];
    for (node, &l) in layer.iter().enumerate() {
        columns[l].push(node);
    }
    order_columns(&mut columns, &preds, &succs);

    let mut out = HashMap::new();
    for (c, column) in columns.iter().enumerate() {
        for (r, &node) in column.iter().enumerate() {
            let pos = Point::new(origin.x + c as f64 * (NODE_W + COLUMN_GAP), origin.y + r as f64 * (NODE_H + ROW_GAP));
            out.insert(ids[node].to_owned(), pos);
        }
    }
    out
}

/// Longest path from a source: a node's layer is one more than its furthest predecessor's.
/// Nodes in a cycle (an invalid draft) are placed after what is acyclic, so layout never loops.
fn layers(preds: &[Vec<usize>], succs: &[Vec<usize>]) -> Vec<usize> {
    let n = preds.len();
    let mut indegree: Vec<usize> = preds.iter().map(Vec::len).collect();
    let mut layer = vec![0usize; n];
    let mut done = vec![false; n];
    let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut placed = 0;
    while placed < n {
        if ready.is_empty() {
            // Break a cycle at the first unplaced node.
            let stuck = (0..n).find(|&i| !done[i]).expect("some node is unplaced");
            layer[stuck] = preds[stuck].iter().filter(|&&p| done[p]).map(|&p| layer[p] + 1).max().unwrap_or(0);
            ready.push(stuck);
            indegree[stuck] = 0;
        }
        // Take the lowest index first so the result does not depend on hash order.
        ready.sort_unstable_by(|a, b| b.cmp(a));
        let node = ready.pop().expect("ready is not empty");
        if done[node] {
            continue;
        }
        done[node] = true;
        placed += 1;
        for &s in &succs[node] {
            if done[s] {
                continue;
            }
            layer[s] = layer[s].max(layer[node] + 1);
            indegree[s] = indegree[s].saturating_sub(1);
            if indegree[s] == 0 {
                ready.push(s);
            }
        }
    }
    layer
}

/// Orders each column by the mean row of its neighbours in the previous (then next) column.
fn order_columns(columns: &mut [Vec<usize>], preds: &[Vec<usize>], succs: &[Vec<usize>]) {
    let n = preds.len();
    let mut row = vec![0.0f64; n];
    let index_rows = |columns: &[Vec<usize>], row: &mut Vec<f64>| {
        for column in columns {
            for (r, &node) in column.iter().enumerate() {
                row[node] = r as f64;
            }
        }
    };
    index_rows(columns, &mut row);
    for sweep in 0..SWEEPS {
        let forward = sweep % 2 == 0;
        let order: Vec<usize> =
            if forward { (1..columns.len()).collect() } else { (0..columns.len().saturating_sub(1)).rev().collect() };
        for c in order {
            let neighbours = if forward { preds } else { succs };
            let key = |node: usize| {
                let ns = &neighbours[node];
                if ns.is_empty() {
                    row[node]
                } else {
                    ns.iter().map(|&m| row[m]).sum::<f64>() / ns.len() as f64
                }
            };
            let mut keyed: Vec<(f64, usize)> = columns[c].iter().map(|&node| (key(node), node)).collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            columns[c] = keyed.into_iter().map(|(_, node)| node).collect();
            for (r, &node) in columns[c].iter().enumerate() {
                row[node] = r as f64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designer::noop_graph as def;

    fn column(p: Point) -> i64 {
        (p.x / (NODE_W + COLUMN_GAP)).round() as i64
    }

    #[test]
    fn every_edge_points_to_a_later_column() {
        let d = def(&["d", "c", "b", "a", "e"], &[("a", "b"), ("b", "c"), ("a", "c"), ("c", "d"), ("e", "d")]);
        let at = layered(&d, Point::new(0.0, 0.0));
        for e in &d.edges {
            assert!(column(at[&e.to]) > column(at[&e.from]), "{} -> {}", e.from, e.to);
        }
        // Longest path: c is after b even though a also leads to it directly.
        assert_eq!(column(at["a"]), 0);
        assert_eq!(column(at["c"]), 2);
        assert_eq!(column(at["d"]), 3);
        assert_eq!(column(at["e"]), 0);
    }

    #[test]
    fn no_two_nodes_share_a_place() {
        let d =
            def(&["s", "x", "y", "z", "t"], &[("s", "x"), ("s", "y"), ("s", "z"), ("x", "t"), ("y", "t"), ("z", "t")]);
        let at = layered(&d, Point::new(10.0, 20.0));
        let mut seen: Vec<(i64, i64)> = at.values().map(|p| (p.x as i64, p.y as i64)).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 5);
        assert_eq!(at["s"], Point::new(10.0, 20.0));
    }

    #[test]
    fn barycenter_ordering_uncrosses_parallel_chains() {
        // a1->b2 and a2->b1 cross when columns keep their input order; ordering should fix it.
        let d = def(&["a1", "a2", "b1", "b2"], &[("a1", "b2"), ("a2", "b1")]);
        let at = layered(&d, Point::new(0.0, 0.0));
        assert!(at["b2"].y < at["b1"].y);
    }

    #[test]
    fn a_cycle_does_not_hang_the_layout() {
        let d = def(&["a", "b", "c"], &[("a", "b"), ("b", "c"), ("c", "b")]);
        let at = layered(&d, Point::new(0.0, 0.0));
        assert_eq!(at.len(), 3);
        assert_eq!(layered(&Definition::default(), Point::new(0.0, 0.0)).len(), 0);
    }
}
