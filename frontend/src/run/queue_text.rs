//! The sentences that explain why an instance waits (`GET /instances/{id}/queue`).

use trellis_model::api::QueuePlace;
use trellis_model::InstanceStatus;

/// One line per fact: the limit that holds it (value and how many run), its place in the
/// line, and for a running instance the nodes waiting on `max_parallel_nodes`. Empty: nothing
/// holds it.
pub fn explain(place: &QueuePlace) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(hold) = &place.held_by {
        let value = hold.value.map_or("no limit".to_owned(), |v| v.to_string());
        let what = if hold.limit == "max_parallel_nodes" { "node" } else { "instance" };
        let plural = if hold.running == 1 { "" } else { "s" };
        lines.push(format!("Held by {} = {value}: {} {what}{plural} running now.", hold.limit, hold.running));
    }
    if place.status == InstanceStatus::Queued {
        match (place.position, place.ahead) {
            (Some(p), Some(a)) => lines.push(format!("Position {p} in the queue, {a} ahead.")),
            (Some(p), None) => lines.push(format!("Position {p} in the queue.")),
            _ => {}
        }
    }
    if let Some(nodes) = place.nodes.as_ref().filter(|n| !n.is_empty()) {
        let names: Vec<String> = nodes.iter().map(|n| format!("{} ({})", n.node, n.position)).collect();
        lines.push(format!("Waiting for a node slot: {}.", names.join(", ")));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_model::api::{QueueHold, QueuedNode};

    fn place(status: InstanceStatus, limit: &str) -> QueuePlace {
        QueuePlace {
            instance_id: "i".into(),
            status,
            held_by: Some(QueueHold { limit: limit.into(), value: Some(1), running: 1 }),
            position: None,
            ahead: None,
            nodes: None,
        }
    }

    #[test]
    fn a_queued_instance_names_its_limit_and_place() {
        let mut p = place(InstanceStatus::Queued, "max_concurrent_instances");
        p.position = Some(2);
        p.ahead = Some(1);
        assert_eq!(
            explain(&p),
            ["Held by max_concurrent_instances = 1: 1 instance running now.", "Position 2 in the queue, 1 ahead."]
        );
    }

    #[test]
    fn a_running_instance_lists_its_waiting_nodes() {
        let mut p = place(InstanceStatus::Running, "max_parallel_nodes");
        p.nodes =
            Some(vec![QueuedNode { node: "b".into(), position: 1 }, QueuedNode { node: "c".into(), position: 2 }]);
        assert_eq!(
            explain(&p),
            ["Held by max_parallel_nodes = 1: 1 node running now.", "Waiting for a node slot: b (1), c (2)."]
        );
    }

    #[test]
    fn nothing_holds_nothing_said() {
        let mut p = place(InstanceStatus::Running, "max_parallel_nodes");
        p.held_by = None;
        p.nodes = Some(Vec::new());
        assert!(explain(&p).is_empty());
    }
}
