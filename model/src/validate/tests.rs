use super::*;
use crate::definition::{Edge, Node};
use proptest::prelude::*;
use serde_json::json;

fn def(nodes: Vec<Node>, edges: Vec<Edge>) -> Definition {
    Definition { nodes, edges, ..Default::default() }
}

fn noop(id: &str) -> Node {
    Node::new(id, "noop")
}

fn codes(report: &Report) -> Vec<&str> {
    report.errors.iter().map(|e| e.code.as_str()).collect()
}

fn check(d: &Definition) -> Report {
    validate(d, &Limits::default())
}

#[test]
fn a_simple_chain_is_valid_without_warnings() {
    let r = check(&def(vec![noop("a"), noop("b")], vec![Edge::new("a", "b")]));
    assert!(r.valid, "{r:?}");
    assert!(r.warnings.is_empty());
}

#[test]
fn an_empty_graph_is_an_error() {
    let r = check(&Definition::default());
    assert_eq!(codes(&r), ["empty_graph"]);
    assert!(r.only_empty_graph());
}

#[test]
fn a_cycle_is_named_in_order_starting_from_the_first_defined_node() {
    let d = def(
        vec![noop("start"), noop("a"), noop("b"), noop("c")],
        vec![Edge::new("start", "a"), Edge::new("a", "b"), Edge::new("b", "c"), Edge::new("c", "a")],
    );
    let r = check(&d);
    assert_eq!(codes(&r), ["cycle"]);
    assert_eq!(r.errors[0].cycle.as_deref().unwrap(), ["a", "b", "c"]);
    assert!(r.errors[0].message.contains("a → b → c → a"));
}

#[test]
fn two_separate_cycles_are_both_reported() {
    let d = def(
        vec![noop("a"), noop("b"), noop("x"), noop("y")],
        vec![Edge::new("a", "b"), Edge::new("b", "a"), Edge::new("x", "y"), Edge::new("y", "x")],
    );
    let cycles: Vec<_> = check(&d).errors.into_iter().filter_map(|e| e.cycle).collect();
    assert_eq!(cycles, [vec!["a", "b"], vec!["x", "y"]]);
}

#[test]
fn a_self_loop_names_the_node() {
    let r = check(&def(vec![noop("a")], vec![Edge::new("a", "a")]));
    assert_eq!(codes(&r), ["self_loop"]);
    assert_eq!(r.errors[0].node.as_deref(), Some("a"));
    assert_eq!(r.errors[0].edge.as_deref(), Some("a->a"));
}

#[test]
fn every_problem_is_reported_at_once() {
    let d = def(
        vec![
            noop("a"),
            noop("a"),
            Node::new("weird", "teleport"),
            Node::new("wait", "delay"),
            Node::new("call", "http").with_config(json!({"method": "FETCH"})),
            Node::new("pick", "branch"),
            Node::new("bad id!", "noop"),
        ],
        vec![Edge::new("a", "ghost"), Edge::new("a", "wait"), Edge::new("a", "wait")],
    );
    let r = check(&d);
    let mut got = codes(&r);
    got.sort();
    assert_eq!(
        got,
        [
            "duplicate_edge",
            "duplicate_node_id",
            "invalid_config",
            "invalid_config",
            "invalid_config",
            "invalid_config",
            "invalid_node_id",
            "unknown_node",
            "unknown_node_type",
        ]
    );
    let about = |code: &str| r.errors.iter().filter(|e| e.code == code).map(|e| e.node.clone()).collect::<Vec<_>>();
    assert_eq!(about("unknown_node_type"), [Some("weird".to_owned())]);
    assert_eq!(about("duplicate_node_id"), [Some("a".to_owned())]);
    let http: Vec<_> =
        r.errors.iter().filter(|e| e.node.as_deref() == Some("call")).map(|e| e.path.clone().unwrap()).collect();
    assert_eq!(http, ["nodes[4].config.method", "nodes[4].config.url"]);
    let ghost = r.errors.iter().find(|e| e.code == "unknown_node").unwrap();
    assert_eq!(ghost.edge.as_deref(), Some("a->ghost"));
    assert_eq!(ghost.path.as_deref(), Some("edges[0].to"));
}

#[test]
fn per_type_configs_are_checked() {
    let cases = [
        ("delay", json!({"duration_ms": 10}), true),
        ("delay", json!({"until": "2026-01-01T00:00:00Z"}), true),
        ("delay", json!({"until": "tomorrow"}), false),
        ("delay", json!({"duration_ms": 1, "until": "2026-01-01T00:00:00Z"}), false),
        ("delay", json!({"duration_ms": -5}), false),
        ("delay", json!({"duration_ms": 400_000_000_000u64}), false),
        ("http", json!({"url": "https://example.test/x"}), true),
        ("http", json!({"url": "ftp://example.test"}), false),
        ("http", json!({"url": "https://x.test", "method": "get"}), false),
        ("transform", json!({"expression": "input.a"}), true),
        ("transform", json!({"expression": ".a"}), false),
        ("transform", json!({}), false),
        ("branch", json!({"condition": "input.ok"}), true),
        ("branch", json!({"condition": "input.x >"}), false),
        ("fail", json!({"message": "{{ input.who"}), false),
        ("http", json!({"url": "https://x.test/{{ input.id", "headers": {"A": "{{ b }}"}}), false),
        ("fail", json!({"fail_attempts": 2}), true),
        ("task", json!({"queue": "emails"}), true),
        ("task", json!({}), false),
        ("noop", json!({"unexpected": 1}), false),
        ("wait_signal", json!({}), true),
        ("script", json!({"source": "return input.a + 1;"}), true),
        ("script", json!({"source": "return 1;", "memory_mb": 1024, "timeout_ms": 60000}), true),
        ("script", json!({"source": "  "}), false),
        ("script", json!({"source": "return 1;", "memory_mb": 0}), false),
        ("script", json!({"source": "return 1;", "timeout_ms": 60001}), false),
        ("script", json!({"source": "return 1;", "language": "python"}), false),
        ("subworkflow", json!({"workflow": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}), true),
        (
            "subworkflow",
            json!({"workflow": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "version": 3, "input": "input.x"}),
            true,
        ),
        ("subworkflow", json!({"workflow": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "version": "latest"}), true),
        ("subworkflow", json!({}), false),
        ("subworkflow", json!({"workflow": "billing"}), false),
        ("subworkflow", json!({"workflow": " 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}), false),
        ("subworkflow", json!({"workflow": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "version": 0}), false),
        ("subworkflow", json!({"workflow": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "version": "newest"}), false),
        ("subworkflow", json!({"workflow": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "input": "input.("}), false),
    ];
    for (kind, config, ok) in cases {
        let r = check(&def(vec![Node::new("n", kind).with_config(config.clone())], vec![]));
        assert_eq!(r.valid, ok, "{kind} {config}: {r:?}");
    }
}

#[test]
fn a_script_nodes_problems_name_their_field() {
    let bad = Node::new("s", "script").with_config(json!({"source": "", "memory_mb": 2048, "timeout_ms": 0}));
    let r = check(&def(vec![bad], vec![]));
    let paths: Vec<_> = r.errors.iter().map(|e| e.path.as_deref().unwrap_or_default()).collect();
    assert_eq!(paths, ["nodes[0].config.source", "nodes[0].config.memory_mb", "nodes[0].config.timeout_ms"]);
    assert!(r.errors[1].message.contains("between 1 and 1024"), "{:?}", r.errors[1]);
}

#[test]
fn branch_outcomes_are_checked_on_edges() {
    let branch = Node::new("b", "branch").with_config(json!({"condition": ".x", "outcomes": ["big", "small"]}));
    let mut to_big = Edge::new("b", "x");
    to_big.when = "big".to_owned().into();
    let mut to_huge = Edge::new("b", "y");
    to_huge.when = "huge".to_owned().into();
    let mut from_noop = Edge::new("x", "y");
    from_noop.when = "big".to_owned().into();
    let r = check(&def(vec![branch, noop("x"), noop("y")], vec![to_big, to_huge, from_noop]));
    let conditions: Vec<_> =
        r.errors.iter().filter(|e| e.code == "invalid_edge_condition").map(|e| e.edge.clone().unwrap()).collect();
    assert_eq!(conditions, ["b->y", "x->y"]);
}

#[test]
fn settings_and_retry_bounds_are_checked() {
    let mut node = noop("a");
    node.retry = Some(crate::RetryPolicy { max_attempts: 0, backoff_ms: 10, max_backoff_ms: 5 });
    node.timeout_ms = Some(0);
    node.stuck_after_ms = Some(0);
    let mut d = def(vec![node], vec![]);
    d.settings.max_parallel_nodes = Some(0);
    let paths: Vec<_> = check(&d).errors.into_iter().map(|e| e.path.unwrap()).collect();
    assert_eq!(
        paths,
        [
            "settings.max_parallel_nodes",
            "nodes[0].timeout_ms",
            "nodes[0].stuck_after_ms",
            "nodes[0].retry.max_attempts",
            "nodes[0].retry.backoff_ms"
        ]
    );
}

#[test]
fn durations_beyond_ten_years_are_refused() {
    let mut node = noop("a");
    node.timeout_ms = Some(MAX_DURATION_MS + 1);
    node.retry = Some(crate::RetryPolicy { max_attempts: 2, backoff_ms: 10, max_backoff_ms: u64::MAX });
    let mut d = def(vec![node], vec![]);
    d.settings.timeout_ms = Some(u64::MAX);
    let paths: Vec<_> = check(&d).errors.into_iter().map(|e| e.path.unwrap()).collect();
    assert_eq!(paths, ["settings.timeout_ms", "nodes[0].timeout_ms", "nodes[0].retry.max_backoff_ms"]);
}

#[test]
fn node_count_over_the_limit_stops_early_with_one_error() {
    let nodes = (0..1_001).map(|i| noop(&format!("n{i}"))).collect();
    let r = check(&def(nodes, vec![]));
    assert_eq!(codes(&r), ["too_many_nodes"]);
}

#[test]
fn byte_size_over_the_limit_is_an_error() {
    let mut node = noop("a");
    node.name = Some("x".repeat(100));
    let limits = Limits { max_bytes: 50, ..Limits::default() };
    assert_eq!(codes(&validate(&def(vec![node], vec![]), &limits)), ["too_large"]);
}

#[test]
fn unreachable_and_disconnected_nodes_are_warnings() {
    let d = def(
        vec![noop("a"), noop("b"), noop("lonely"), noop("p"), noop("q")],
        vec![Edge::new("a", "b"), Edge::new("p", "q"), Edge::new("q", "p")],
    );
    let r = check(&d);
    let warned =
        |code: &str| r.warnings.iter().filter(|w| w.code == code).map(|w| w.node.clone().unwrap()).collect::<Vec<_>>();
    assert_eq!(warned("unreachable"), ["p", "q"]);
    assert_eq!(warned("disconnected"), ["lonely", "p", "q"]);
}

#[test]
fn unknown_fields_are_rejected_when_parsing() {
    let err = serde_json::from_value::<Definition>(json!({"nodes": [], "edgez": []})).unwrap_err();
    assert!(err.to_string().contains("edgez"));
    let err = serde_json::from_value::<Definition>(json!({"nodes": [{"id": "a", "type": "noop", "timout_ms": 1}]}))
        .unwrap_err();
    assert!(err.to_string().contains("timout_ms"));
}

#[test]
fn definitions_round_trip_through_json() {
    let text = json!({
        "nodes": [{"id": "fetch", "type": "http", "name": "Fetch", "config": {"method": "GET", "url": "https://x.test"},
                   "position": {"x": 1.0, "y": 2.0}, "retry": {"max_attempts": 3, "backoff_ms": 200, "max_backoff_ms": 10000},
                   "timeout_ms": 30000},
                  {"id": "notify", "type": "noop"}],
        "edges": [{"from": "fetch", "to": "notify", "when": "failure"}],
        "settings": {"max_concurrent_instances": 10, "on_limit": "reject", "max_parallel_nodes": 8, "timeout_ms": 3600000}
    });
    let d: Definition = serde_json::from_value(text.clone()).unwrap();
    assert_eq!(serde_json::to_value(&d).unwrap(), text);
}

#[test]
fn a_concurrency_key_must_be_an_expression_and_max_per_key_needs_one() {
    let with = |key: Option<&str>, max: Option<u32>| {
        let mut d = def(vec![noop("a")], vec![]);
        d.settings.concurrency_key = key.map(str::to_owned);
        d.settings.max_per_key = max;
        check(&d)
    };
    assert!(with(Some("input.customer_id"), Some(2)).valid);
    assert!(with(Some("input.customer_id"), None).valid, "max_per_key defaults to 1");
    let paths = |r: Report| r.errors.iter().map(|e| e.path.clone().unwrap_or_default()).collect::<Vec<_>>();
    assert_eq!(paths(with(None, Some(2))), ["settings.max_per_key"]);
    assert_eq!(paths(with(Some("input.id"), Some(0))), ["settings.max_per_key"]);
    assert_eq!(paths(with(Some("  "), None)), ["settings.concurrency_key"]);
    let broken = with(Some("input.(("), None);
    assert!(broken.errors[0].message.contains("not a valid expression"), "{:?}", broken.errors);
}

proptest! {
    /// Edges that only point forward in a fixed order can never form a cycle; one edge
    /// pointing back along an existing path always does.
    #[test]
    fn forward_edges_never_form_a_cycle_and_a_back_edge_always_does(
        n in 2usize..30,
        raw in proptest::collection::vec((0usize..30, 0usize..30), 0..60),
    ) {
        let nodes: Vec<_> = (0..n).map(|i| noop(&format!("n{i}"))).collect();
        let mut edges: Vec<Edge> = raw.into_iter()
            .map(|(a, b)| (a % n, b % n))
            .filter(|(a, b)| a < b)
            .map(|(a, b)| Edge::new(format!("n{a}"), format!("n{b}")))
            .collect();
        edges.sort_by_key(|e| e.label());
        edges.dedup_by_key(|e| e.label());
        let r = check(&def(nodes.clone(), edges.clone()));
        prop_assert!(!codes(&r).contains(&"cycle"), "{:?}", r.errors);
        prop_assert!(r.valid);

        let mut chain = edges.clone();
        for i in 0..n - 1 {
            let e = Edge::new(format!("n{i}"), format!("n{}", i + 1));
            if !chain.iter().any(|c| c.label() == e.label()) {
                chain.push(e);
            }
        }
        chain.push(Edge::new(format!("n{}", n - 1), "n0"));
        let r = check(&def(nodes, chain));
        let cycle = r.errors.iter().find(|e| e.code == "cycle");
        prop_assert!(cycle.is_some());
        prop_assert_eq!(cycle.unwrap().cycle.as_ref().unwrap()[0].as_str(), "n0");
    }
}

/// Every expression and template of every node type is compiled: a syntax error is a problem
/// at its node and field (with line and column), not a failure at run time.
#[test]
fn every_expression_and_template_is_compiled_with_its_problem_at_its_field() {
    let node = |id: &str, kind: &str, config: serde_json::Value| {
        let mut n = Node::new(id, kind);
        n.config = config;
        n
    };
    let d = def(
        vec![
            node("t", "transform", json!({"expression": "{'tier': nodes.http_1.output.body.tier"})),
            node("b", "branch", json!({"condition": "input.x >"})),
            node(
                "h",
                "http",
                json!({"url": "http://api.test/{{ input.x", "headers": {"X-Id": "{{ input.id }"},
                       "body": {"user": {"name": "{% if %}"}, "ok": "{{ input.ok }}"}}),
            ),
            node("f", "fail", json!({"message": "failed for {{ input.who"})),
            node("k", "task", json!({"queue": "q", "input": {"a": ["{{ input.a }}", "{{ ("]}})),
            node(
                "m",
                "map",
                json!({"items": "[1]", "node": {"type": "transform", "config": {"expression": "item +"}}}),
            ),
        ],
        vec![],
    );
    let r = check(&d);
    let at: Vec<(String, String)> =
        r.errors.iter().map(|e| (e.node.clone().unwrap_or_default(), e.path.clone().unwrap_or_default())).collect();
    let expected = [
        ("t", "nodes[0].config.expression"),
        ("b", "nodes[1].config.condition"),
        ("h", "nodes[2].config.url"),
        ("h", "nodes[2].config.headers.X-Id"),
        ("h", "nodes[2].config.body.user.name"),
        ("f", "nodes[3].config.message"),
        ("k", "nodes[4].config.input.a[1]"),
        ("m", "nodes[5].config.node.config.expression"),
    ];
    let expected: Vec<(String, String)> = expected.iter().map(|(n, p)| (n.to_string(), p.to_string())).collect();
    assert_eq!(at, expected, "{:#?}", r.errors);
    assert!(r.errors.iter().all(|e| e.message.contains("line 1, column ")), "{:#?}", r.errors);
    assert!(r.errors[0].message.starts_with("`expression` is not a valid expression: line 1, column"));
}

#[test]
fn flow_control_windows_are_checked_at_their_fields() {
    use crate::flow::Window;
    let mut d = def(vec![noop("a")], vec![]);
    d.settings.throttle = Some(Window { limit: 0, period_ms: 1000, key: Some("input.(".into()) });
    d.settings.rate_limit = Some(Window { limit: 5, period_ms: 0, key: None });
    let paths: Vec<_> = check(&d).errors.into_iter().map(|e| e.path.unwrap()).collect();
    assert_eq!(paths, ["settings.throttle.limit", "settings.throttle.key", "settings.rate_limit.period_ms"]);
    d.settings.throttle = Some(Window { limit: 5, period_ms: 1000, key: Some("input.customer".into()) });
    d.settings.rate_limit = Some(Window { limit: 5, period_ms: 60_000, key: None });
    assert!(check(&d).errors.is_empty());
}
