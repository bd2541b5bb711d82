//! The sentences that explain why an instance waits (`GET /instances/{id}/queue`).

use trellis_model::api::{QueueHold, QueuePlace};
use trellis_model::InstanceStatus;

/// One line per fact: the limit that holds it (value and how many run), its place in the
/// line, and for a running instance the nodes waiting on `max_parallel_nodes`. Empty: nothing
/// holds it.
pub fn explain(place: &QueuePlace) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(hold) = &place.held_by {
        if hold.limit == "throttle" {
            lines.push(throttle_line(hold));
        } else if hold.limit == "debounce" {
            lines.push(debounce_line(hold));
        } else if hold.limit == "limit" {
            lines.push(shared_limit_line(hold));
        } else if let (Some(key), Some(key_value)) = (&hold.key, &hold.key_value) {
            let limit = hold.value.unwrap_or_default();
            lines.push(format!("Waiting for key {key} = {key_value}: {} of {limit} running.", hold.running));
        } else {
            lines.push(held_line(hold));
        }
    }
    if place.status == InstanceStatus::Queued {
        let line = match place.held_by.as_ref().and_then(|h| h.key.as_ref()) {
            Some(_) => "this key's line",
            None => "the queue",
        };
        match (place.position, place.ahead) {
            (Some(p), Some(a)) => lines.push(format!("Position {p} in {line}, {a} ahead.")),
            (Some(p), None) => lines.push(format!("Position {p} in {line}.")),
            _ => {}
        }
    }
    if let Some(nodes) = place.nodes.as_ref().filter(|n| !n.is_empty()) {
        let names: Vec<String> = nodes.iter().map(|n| format!("{} ({})", n.node, n.position)).collect();
        lines.push(format!("Waiting for a node slot: {}.", names.join(", ")));
    }
    lines
}

/// "Throttled (key input.customer = "acme"): 5 of 5 starts in the window; the window opens at 12:00:01.250."
fn throttle_line(hold: &QueueHold) -> String {
    let limit = hold.value.unwrap_or_default();
    let key = match (&hold.key, &hold.key_value) {
        (Some(key), Some(value)) => format!(" (key {key} = {value})"),
        _ => String::new(),
    };
    let opens = match hold.until.as_deref().and_then(|t| t.get(11..23)) {
        Some(time) => format!("; the window opens at {time} UTC"),
        None => "; waiting for earlier starts with this key".to_owned(),
    };
    format!("Throttled{key}: {} of {limit} starts in the window{opens}.", hold.running)
}

/// "Debounced: 3 starts so far; made at 12:00:02.000 UTC unless another start comes first."
fn debounce_line(hold: &QueueHold) -> String {
    let plural = if hold.running == 1 { "" } else { "s" };
    let when = match hold.until.as_deref().and_then(|t| t.get(11..23)) {
        Some(time) => format!("; made at {time} UTC unless another start comes first"),
        None => String::new(),
    };
    format!("Debounced: {} start{plural} so far{when}.", hold.running)
}

/// "Node call waits for the shared limit stripe-api (1 waiting ahead); it asks again at 12:00:01.250 UTC."
fn shared_limit_line(hold: &QueueHold) -> String {
    let node = hold.node.as_deref().unwrap_or("a node");
    let name = hold.name.as_deref().unwrap_or("?");
    let ahead = match hold.running {
        0 => "first in line".to_owned(),
        n => format!("{n} waiting ahead"),
    };
    let when = match hold.until.as_deref().and_then(|t| t.get(11..23)) {
        Some(time) => format!("; it asks again at {time} UTC, or as soon as a place frees"),
        None => String::new(),
    };
    format!("Node {node} waits for the shared limit {name} ({ahead}){when}. Waiting counts no attempt.")
}

/// "Held by max_concurrent_instances = 2: 2 instances running now."
fn held_line(hold: &QueueHold) -> String {
    let value = hold.value.map_or("no limit".to_owned(), |v| v.to_string());
    let what = if hold.limit == "max_parallel_nodes" { "node" } else { "instance" };
    let plural = if hold.running == 1 { "" } else { "s" };
    format!("Held by {} = {value}: {} {what}{plural} running now.", hold.limit, hold.running)
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_model::api::QueuedNode;

    fn place(status: InstanceStatus, limit: &str) -> QueuePlace {
        QueuePlace {
            instance_id: "i".into(),
            status,
            held_by: Some(QueueHold {
                name: None,
                node: None,
                limit: limit.into(),
                value: Some(1),
                running: 1,
                key: None,
                key_value: None,
                until: None,
            }),
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
    fn a_throttled_instance_says_when_its_window_opens() {
        let mut p = place(InstanceStatus::Queued, "throttle");
        if let Some(hold) = p.held_by.as_mut() {
            hold.until = Some("2026-11-29T12:00:01.250Z".into());
        }
        p.position = Some(1);
        p.ahead = Some(0);
        assert_eq!(
            explain(&p),
            [
                "Throttled: 1 of 1 starts in the window; the window opens at 12:00:01.250 UTC.",
                "Position 1 in the queue, 0 ahead."
            ]
        );
    }

    #[test]
    fn a_gathering_burst_says_when_its_instance_is_made() {
        let mut p = place(InstanceStatus::Queued, "debounce");
        if let Some(hold) = p.held_by.as_mut() {
            (hold.running, hold.until) = (3, Some("2026-11-29T12:00:02.000Z".into()));
        }
        assert_eq!(
            explain(&p),
            ["Debounced: 3 starts so far; made at 12:00:02.000 UTC unless another start comes first."]
        );
    }

    #[test]
    fn a_node_waiting_for_a_shared_limit_names_it_and_when_it_asks_again() {
        let mut p = place(InstanceStatus::Running, "limit");
        if let Some(hold) = p.held_by.as_mut() {
            (hold.name, hold.node, hold.running) = (Some("stripe-api".into()), Some("call".into()), 0);
            hold.until = Some("2026-11-29T12:00:01.250Z".into());
        }
        assert_eq!(
            explain(&p),
            ["Node call waits for the shared limit stripe-api (first in line); it asks again at 12:00:01.250 UTC, \
              or as soon as a place frees. Waiting counts no attempt."]
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
    fn a_queued_instance_held_by_its_key_names_the_key_and_value() {
        let mut p = place(InstanceStatus::Queued, "max_per_key");
        let hold = p.held_by.as_mut().unwrap();
        hold.value = Some(2);
        hold.running = 2;
        hold.key = Some("input.customer_id".into());
        hold.key_value = Some(serde_json::json!("acme"));
        p.position = Some(1);
        p.ahead = Some(0);
        assert_eq!(
            explain(&p),
            [
                "Waiting for key input.customer_id = \"acme\": 2 of 2 running.",
                "Position 1 in this key's line, 0 ahead."
            ]
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
