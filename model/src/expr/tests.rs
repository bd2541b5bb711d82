use super::*;
use serde_json::json;

#[test]
fn expressions_see_the_input_and_earlier_outputs() {
    let x = Expressions::default();
    let ctx = json!({"input": {"n": 3}, "nodes": {"a": {"output": {"items": [1, 2]}}}});
    assert_eq!(x.eval("input.n * 2", &ctx).unwrap(), json!(6));
    assert_eq!(x.eval("nodes.a.output.items | length", &ctx).unwrap(), json!(2));
    assert_eq!(x.eval("{'sum': input.n + 1}", &ctx).unwrap(), json!({"sum": 4}));
    assert_eq!(x.render("id={{ input.n }}", &ctx).unwrap(), "id=3");
    assert_eq!(x.render_value(&json!({"a": ["{{ input.n }}", 1]}), &ctx).unwrap(), json!({"a": ["3", 1]}));
}

#[test]
fn missing_references_and_syntax_errors_are_reported() {
    let x = Expressions::default();
    let ctx = json!({"input": {}});
    assert!(x.eval("input.nope.deeper", &ctx).unwrap_err().contains("expression failed"));
    assert!(x.eval("input.(", &ctx).unwrap_err().contains("invalid expression"));
    assert!(x.render("{{ nodes.x }}", &ctx).is_err());
}

#[test]
fn runaway_loops_run_out_of_fuel() {
    let x = Expressions::default();
    let err = x.render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", &json!({}));
    assert!(err.is_err());
}

/// Runs `f`, returning its result and how long it took (for the "bounded" tests, which
/// only assert generous bounds: before the meter these took tens of seconds or exhausted
/// memory).
fn timed<T>(f: impl FnOnce() -> T) -> (T, std::time::Duration) {
    let started = std::time::Instant::now();
    let out = f();
    (out, started.elapsed())
}

#[test]
fn a_filter_over_a_repeated_range_is_refused_at_the_sequence_cap() {
    let x = Expressions::default();
    let (err, took) = timed(|| x.eval("(range(100000) * 100000) | sum", &json!({})).unwrap_err());
    assert!(err.contains("over the cap of 100000 items"), "{err}");
    assert!(took.as_secs() < 2, "took {took:?}");
}

#[test]
fn many_sums_over_big_ranges_use_up_the_budget() {
    let x = Expressions::default();
    let bomb = (0..200).map(|_| "(range(100000) | sum)").collect::<Vec<_>>().join(" + ");
    let (err, took) = timed(|| x.eval(&bomb, &json!({})).unwrap_err());
    assert!(err.contains("budget of 4000000 steps"), "{err}");
    assert!(took.as_secs() < 5, "took {took:?}");
}

#[test]
fn nested_loops_over_filters_use_up_the_budget() {
    let x = Expressions::default();
    let template = "{% for i in range(100000) %}{{ range(100000) | join(',') | length }}{% endfor %}";
    let (err, took) = timed(|| x.render(template, &json!({})).unwrap_err());
    assert!(err.contains("budget of"), "{err}");
    assert!(took.as_secs() < 5, "took {took:?}");
}

#[test]
fn joins_and_replacements_that_would_blow_up_are_refused_before_they_allocate() {
    let x = Expressions::default();
    let ctx = json!({});
    let join = x.eval("range(100000) | join('x' * 1000000)", &ctx).unwrap_err();
    assert!(join.contains("over the cap of 1048576 bytes"), "{join}");
    let replace = x.eval("('y' * 1000) | replace('', 'x' * 1000000)", &ctx).unwrap_err();
    assert!(replace.contains("over the cap of 1048576 bytes"), "{replace}");
    let indent = x.eval("('a\\n' * 1000) | indent(100000)", &ctx).unwrap_err();
    assert!(indent.contains("over the cap"), "{indent}");
    let batch = x.eval("[1] | batch(1000000000, 0)", &ctx).unwrap_err();
    assert!(batch.contains("over the cap of 100000 items"), "{batch}");
}

#[test]
fn a_result_or_a_rendered_template_over_the_caps_is_refused() {
    let x = Expressions::default();
    let big = x.eval("'x' * 2000000", &json!({})).unwrap_err();
    assert!(big.contains("a string of 2000000 bytes is over the cap of 1048576 bytes"), "{big}");
    let lazy = x.eval("[0] * 1000000000000", &json!({})).unwrap_err();
    assert!(lazy.contains("over the cap of 100000 items"), "{lazy}");
    let rendered = x.render("{% for i in range(3000) %}{{ 'x' * 1000 }}{% endfor %}", &json!({})).unwrap_err();
    assert!(rendered.contains("over the cap of 1048576 bytes"), "{rendered}");
}

#[test]
fn ordinary_work_fits_well_inside_the_budget() {
    let x = Expressions::default();
    let items: Vec<_> = (0..10_000).map(|i| json!({"id": i, "name": format!("item {i}")})).collect();
    let ctx = json!({"input": {"items": items}});
    assert_eq!(x.eval("input['items'] | map(attribute='id') | sum", &ctx).unwrap(), json!(49_995_000));
    assert_eq!(
        x.eval("input['items'] | selectattr('id', 'lt', 3) | map(attribute='name') | join(',')", &ctx).unwrap(),
        json!("item 0,item 1,item 2")
    );
    assert_eq!(x.eval("range(5) | reverse | list", &ctx).unwrap(), json!([4, 3, 2, 1, 0]));
    assert_eq!(x.eval("'ab' | indent(2)", &ctx).unwrap(), json!("ab"));
    assert_eq!(x.eval("{'a': [1, 2]} | tojson", &ctx).unwrap(), json!("{\"a\":[1,2]}"));
    assert_eq!(x.eval("2 is in([1, 2])", &ctx).unwrap(), json!(true));
    assert_eq!(x.eval("'%s-%s' | format(1, 2)", &ctx).unwrap(), json!("1-2"));
    assert!(x.check("input.(").unwrap_err().starts_with("line 1, column 7: syntax error"), "{:?}", x.check("input.("));
    assert!(x.check("(range(100000) * 100000) | sum").is_ok());
}

#[test]
fn looking_at_the_top_of_a_big_value_in_a_loop_is_cheap() {
    let x = Expressions::default();
    let items: Vec<_> = (0..5_000).map(|i| json!({"id": i, "tags": ["a", "b", "c"]})).collect();
    let ctx = json!({"input": {"items": items}});
    let template = "{% for i in input['items'] %}{% if loop.index == input['items'] | length %}{{ input['items'] | first | attr('id') }}{% endif %}{% endfor %}";
    assert_eq!(x.render(template, &ctx).unwrap(), "0");
    let lazy = x.eval("([0] * 1000000000000) | last", &ctx).unwrap_err();
    assert!(lazy.contains("over the cap of 100000 items"), "{lazy}");
}

#[test]
fn syntax_errors_say_where_they_are_and_plain_text_is_no_template() {
    let x = Expressions::default();
    let broken = x.check("{'tier': nodes.http_1.output.body.tier").unwrap_err();
    assert!(broken.starts_with("line 1, column "), "{broken}");
    assert!(broken.contains("syntax error"), "{broken}");
    assert!(x.check("input.x >").unwrap_err().contains("syntax error"));
    let template = x.check_template("http://api.example.com/\n{{ input.x").unwrap_err();
    assert!(template.starts_with("line 2, column "), "{template}");
    assert_eq!(x.check_template("http://api.example.com/{{ input.x }}"), Ok(()));
    assert_eq!(x.check_template("no template here, { just braces }"), Ok(()));
    assert!(x.check_template("{% if %}").is_err());
}
