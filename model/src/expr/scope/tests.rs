use super::{narrow, reached, Reached};
use crate::expr::Expressions;
use proptest::prelude::*;
use serde_json::{json, Value};

fn context() -> Value {
    json!({
        "input": {"order": {"id": 7, "lines": [1, 2, 3]}, "customer": "acme", "other": "x"},
        "nodes": {
            "big": {"output": {"body": {"id": 1, "blob": "b".repeat(1000)}, "status": 200}, "status": "succeeded"},
            "small": {"output": {"a": 1}, "status": "succeeded"}
        },
        "instance": {"id": "i-1"}
    })
}

#[test]
fn a_static_path_keeps_only_the_field_it_names() {
    let narrowed = narrow(&["nodes.big.output.body.id + 1"], &context());
    assert_eq!(narrowed, json!({"nodes": {"big": {"output": {"body": {"id": 1}}}}}));
}

#[test]
fn quoted_keys_and_spaces_are_static_accessors() {
    let narrowed = narrow(&["nodes [ 'big' ] . output[\"status\"]"], &context());
    assert_eq!(narrowed, json!({"nodes": {"big": {"output": {"status": 200}}}}));
}

#[test]
fn a_dynamic_accessor_keeps_the_value_where_the_path_stops() {
    let narrowed = narrow(&["input.order.lines[input.other|length]"], &context());
    assert_eq!(narrowed["input"], json!({"order": {"lines": [1, 2, 3]}, "other": "x"}));
    let narrowed = narrow(&["input.order.lines[0]"], &context());
    assert_eq!(narrowed["input"], json!({"order": {"lines": [1, 2, 3]}}));
}

#[test]
fn a_root_used_whole_or_through_a_filter_is_kept_whole() {
    for text in ["nodes | length", "{% for k in nodes %}{{ k }}{% endfor %}", "nodes"] {
        assert_eq!(narrow(&[text], &context())["nodes"], context()["nodes"], "{text}");
    }
}

#[test]
fn a_method_call_keeps_its_receiver() {
    assert_eq!(narrow(&["input.order.items()"], &context())["input"], json!({"order": context()["input"]["order"]}));
}

#[test]
fn roots_not_mentioned_are_left_out_and_words_that_contain_a_root_do_not_count() {
    assert_eq!(narrow(&["my_input.x + inputs + 1"], &context()), json!({}));
    assert_eq!(narrow(&["'a' ~ instance.id"], &context()), json!({"instance": {"id": "i-1"}}));
}

#[test]
fn several_texts_share_one_narrowed_context() {
    let narrowed = narrow(&["{{ input.customer }}", "nodes.small.output.a", "{{ input.order.id }}"], &context());
    assert_eq!(
        narrowed,
        json!({"input": {"customer": "acme", "order": {"id": 7}}, "nodes": {"small": {"output": {"a": 1}}}})
    );
}

#[test]
fn a_name_that_goes_on_past_ascii_stops_the_path() {
    let narrowed = narrow(&["input.orderé"], &context());
    assert_eq!(narrowed["input"], context()["input"]);
}

#[test]
fn aliases_and_loops_keep_what_they_start_from() {
    let text = "{% set o = input.order %}{% for l in o.lines %}{{ loop.index }}{% endfor %}{{- nodes['big'].output | tojson -}}";
    let narrowed = narrow(&[text], &context());
    assert_eq!(narrowed["input"], json!({"order": context()["input"]["order"]}));
    assert_eq!(narrowed["nodes"], json!({"big": {"output": context()["nodes"]["big"]["output"]}}));
}

#[test]
fn debug_sees_the_whole_context() {
    assert_eq!(narrow(&["debug()"], &context()), context());
}

#[test]
fn missing_fields_stay_missing() {
    assert_eq!(narrow(&["input.nope.deeper"], &context()), json!({"input": {}}));
}

/// Expressions over the sample context built from a small grammar of paths, filters,
/// operators and statements.
fn expression() -> impl Strategy<Value = String> {
    let root = prop_oneof![Just("input"), Just("nodes"), Just("instance")];
    let key = prop_oneof![
        Just(".order"),
        Just(".lines"),
        Just(".id"),
        Just(".big"),
        Just(".small"),
        Just(".output"),
        Just(".body"),
        Just(".status"),
        Just("['customer']"),
        Just("[\"big\"]"),
        Just("[0]"),
        Just(".missing"),
        Just(" . a"),
    ];
    let path = (root, prop::collection::vec(key, 0..5)).prop_map(|(r, keys)| format!("{r}{}", keys.concat()));
    let tail = prop_oneof![
        Just(""),
        Just(" | length"),
        Just(" | tojson"),
        Just(" is defined"),
        Just(" ~ 'x'"),
        Just("|default('d')"),
    ];
    let term = (path, tail).prop_map(|(p, t)| format!("{p}{t}"));
    prop::collection::vec(term, 1..3).prop_map(|terms| terms.join(" ~ "))
}

proptest! {
    #[test]
    fn an_expression_gives_the_same_in_the_narrowed_context(text in expression()) {
        let x = Expressions::default();
        let whole = x.eval(&text, &context());
        let narrowed = x.eval(&text, &narrow(&[&text], &context()));
        prop_assert_eq!(whole.is_ok(), narrowed.is_ok(), "{}: {:?} vs {:?}", text, whole, narrowed);
        if let (Ok(a), Ok(b)) = (whole, narrowed) {
            prop_assert_eq!(a, b, "{}", text);
        }
    }

    #[test]
    fn a_template_renders_the_same_in_the_narrowed_context(text in expression()) {
        let template = format!("<{{{{ {text} }}}}>");
        let x = Expressions::default();
        let whole = x.render(&template, &context());
        let narrowed = x.render(&template, &narrow(&[&template], &context()));
        prop_assert_eq!(whole, narrowed, "{}", template);
    }
}

#[test]
fn reached_names_the_entries_a_text_can_read_and_errs_towards_more() {
    let keys = |k: &[&str]| Reached::Keys(k.iter().map(|s| s.to_string()).collect());
    assert_eq!(reached(&["{{ instance.id }}"], "nodes"), Reached::Nothing);
    assert_eq!(reached(&["{{ nodes.a.output.x }}", "nodes['b'].status"], "nodes"), keys(&["a", "b"]));
    assert_eq!(reached(&["{% for n in nodes %}{{ n }}{% endfor %}"], "nodes"), Reached::Whole);
    assert_eq!(reached(&["nodes[input.which].output"], "nodes"), Reached::Whole);
    assert_eq!(reached(&["{{ nodes.a }} {{ debug() }}"], "nodes"), Reached::Whole);
    // What `reached` keeps is never less than what `narrow` keeps of the same root.
    let texts = ["nodes.big.output.body.id", "nodes.small"];
    let narrowed = narrow(&texts, &context());
    let Reached::Keys(kept) = reached(&texts, "nodes") else { panic!("keys") };
    let names: Vec<&String> = narrowed["nodes"].as_object().unwrap().keys().collect();
    assert!(names.iter().all(|n| kept.contains(n)), "{names:?} {kept:?}");
}
