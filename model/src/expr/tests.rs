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
    // Each `range` is charged to the meter for its items, which is spent first.
    let err = x.render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", &json!({}));
    assert!(err.as_ref().is_err_and(|e| e.contains("budget of 4000000 steps")), "{err:?}");
    // Nothing but instructions: the fuel is.
    let err = x.render("{% for i in [0] * 100000000 %}{% endfor %}", &json!({}));
    assert!(err.as_ref().is_err_and(|e| e.contains("ran out of fuel")), "{err:?}");
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
    // A hundred million items: the most minijinja repeats a sequence to; past that it refuses.
    let (err, took) = timed(|| x.eval("(range(100000) * 1000) | sum", &json!({})).unwrap_err());
    assert!(err.contains("over the cap of 100000 items"), "{err}");
    assert!(took.as_secs() < 2, "took {took:?}");
    let err = x.eval("(range(100000) * 100000) | sum", &json!({})).unwrap_err();
    assert!(err.contains("repeated sequence is too large"), "{err}");
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
    let lazy = x.eval("[0] * 100000000", &json!({})).unwrap_err();
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
    let lazy = x.eval("([0] * 100000000) | last", &ctx).unwrap_err();
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

/// Lists and maps read as text the way minijinja 2 wrote them (`["a"]`, not 3.x's `['a']`),
/// wherever our code turns them into text.
#[test]
fn lists_and_maps_read_as_text_as_they_did_in_minijinja_2() {
    let x = Expressions::default();
    let ctx = json!({"input": {"tags": ["a", "it's", "say \"hi\""], "m": {"k": [1, null, true, 1.5]}}});
    let render = |t: &str| x.render(t, &ctx).unwrap();
    let tags = r#"["a", "it's", "say \"hi\""]"#;
    assert_eq!(render("{{ input.tags }}"), tags);
    assert_eq!(render("{{ input.m }}"), r#"{"k": [1, None, True, 1.5]}"#);
    assert_eq!(render("{{ input.tags | string }}"), tags);
    assert_eq!(render("{{ [input.tags[:1], [2]] | join(';') }}"), r#"["a"];[2]"#);
    assert_eq!(render("{{ '%s!' | format(input.tags[:1]) }}"), r#"["a"]!"#);
    assert_eq!(render("{{ input.m | items }}"), r#"[["k", [1, None, True, 1.5]]]"#);
    assert_eq!(render("{{ (1, 'a') }}"), r#"[1, "a"]"#);
    assert_eq!(render("{{ [1] * 2 }}"), "[1, 1]");
    assert_eq!(render("{{ input.tags[:1] | pprint }}"), "[\n    \"a\",\n]");
    assert_eq!(render("{{ 'a' | pprint }}"), "\"a\"");
    assert_eq!(render("{{ debug(input.tags[:1]) }}"), "[\n    \"a\",\n]");
    // Strings and numbers are untouched.
    assert_eq!(render("{{ 'a' }} {{ 1.0 }} {{ none }} {{ true }}"), "a 1.0 None True");
    assert_eq!(render("{{ input.tags[0] | string }}{{ ['x', 1] | join }}"), "ax1");
}

#[test]
fn tojson_writes_compact_html_safe_json_as_in_minijinja_2() {
    let x = Expressions::default();
    let ctx = json!({"input": {"v": {"a": ["<b>", "x'y&"]}}});
    assert_eq!(x.eval("input.v | tojson", &ctx).unwrap(), json!(r#"{"a":["\u003cb\u003e","x\u0027y\u0026"]}"#));
    assert_eq!(x.eval("[1] | tojson(indent=2)", &ctx).unwrap(), json!("[\n  1\n]"));
    assert_eq!(x.eval("[1] | tojson(true)", &ctx).unwrap(), json!("[\n  1\n]"));
    assert_eq!(x.eval("[1] | tojson(false)", &ctx).unwrap(), json!("[1]"));
}

/// `~` turns its operands into text inside minijinja, where no formatter of ours reaches: a
/// list or a map concatenated reads the minijinja 3 way. Pinned so a change is noticed.
#[test]
fn concatenating_a_list_reads_it_the_minijinja_3_way() {
    let x = Expressions::default();
    let ctx = json!({"input": {"tags": ["a", "b"], "n": [1, 2]}});
    assert_eq!(x.render("{{ 'tags: ' ~ input.tags }}", &ctx).unwrap(), "tags: ['a', 'b']");
    // Numbers read the same either way; a list of strings is what differs.
    assert_eq!(x.render("{{ 'n: ' ~ input.n }}", &ctx).unwrap(), "n: [1, 2]");
    // The way to the 2.x text: print it, or `string` it first.
    assert_eq!(x.render("{{ 'tags: ' ~ (input.tags | string) }}", &ctx).unwrap(), r#"tags: ["a", "b"]"#);
}

#[test]
fn results_are_the_same_json_as_before() {
    let x = Expressions::default();
    let ctx = json!({"input": {"m": {"b": 2, "a": 1}}});
    assert_eq!(x.eval("(1, 'a')", &ctx).unwrap(), json!([1, "a"]));
    assert_eq!(x.eval("input.m | items | list", &ctx).unwrap(), json!([["a", 1], ["b", 2]]));
    assert_eq!(x.eval("input.m | dictsort", &ctx).unwrap(), json!([["a", 1], ["b", 2]]));
}

/// Strict undefined reaches the filters that count or pick: a missing value is an error there
/// as in minijinja 2, not a length of 0 or an empty list.
#[test]
fn counting_or_picking_from_a_missing_value_fails_as_in_minijinja_2() {
    let x = Expressions::default();
    let ctx = json!({"input": {"a": {"k": 1}}});
    for (filter, detail) in [
        ("length", "cannot calculate length of value of type undefined"),
        ("count", "cannot calculate length of value of type undefined"),
        ("first", "cannot get first item from value"),
        ("last", "cannot get last item from value"),
        ("items", "cannot convert value into pairs"),
    ] {
        let err = x.eval(&format!("input.missing | {filter}"), &ctx).unwrap_err();
        assert_eq!(err, format!("expression failed: invalid operation ({detail})"));
        assert!(x.eval(&format!("input.a | {filter}"), &ctx).is_ok(), "{filter}");
    }
    assert_eq!(x.eval("input.missing | default(1)", &ctx).unwrap(), json!(1));
}
