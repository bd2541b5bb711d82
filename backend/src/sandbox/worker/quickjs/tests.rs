use super::*;
use serde_json::json;

const LIMITS: Limits = Limits { memory_mb: 64, timeout_ms: 1_000 };

fn script(source: &str, limits: Limits) -> Script {
    Script {
        source: source.to_owned(),
        input: json!({"a": 2, "items": [1, 2, 3]}),
        nodes: json!({"fetch": {"output": {"b": 40}, "status": "succeeded"}}),
        instance: json!({"id": "0190a000-0000-7000-8000-000000000001", "node": "calc", "attempt": 1}),
        item: json!({"sku": "x"}),
        index: json!(4),
        now: DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z").unwrap().with_timezone(&Utc),
        limits,
    }
}

fn run_src(source: &str) -> Ran {
    run(&script(source, LIMITS))
}

fn output(source: &str) -> Json {
    let ran = run_src(source);
    ran.output.unwrap_or_else(|f| panic!("{source}: {f:?}"))
}

fn failure(source: &str, limits: Limits) -> Failure {
    match run(&script(source, limits)).output {
        Ok(v) => panic!("{source} gave {v}"),
        Err(f) => f,
    }
}

#[test]
fn a_map_items_script_sees_its_item_and_index() {
    assert_eq!(output("return [item.sku, index];"), json!(["x", 4]));
}

#[test]
fn a_script_computes_from_its_input_and_an_earlier_nodes_output() {
    let out = output("const sum = input.items.reduce((s, x) => s + x, 0);\nreturn {total: sum * input.a + nodes.fetch.output.b, who: instance.node};");
    assert_eq!(out, json!({"total": 52, "who": "calc"}));
}

#[test]
fn console_lines_are_kept_with_their_level() {
    let ran = run_src(
        "console.log('hello', {a: 1}, [2]); console.warn('careful'); console.error(new TypeError('bad')); return 1;",
    );
    assert_eq!(ran.output, Ok(json!(1)));
    assert_eq!(ran.logs, ["hello {\"a\":1} [2]", "[warn] careful", "[error] TypeError: bad"]);
}

#[test]
fn logs_survive_a_failing_script_and_are_bounded() {
    let ran = run_src("for (let i = 0; i < 1000; i++) console.log('line ' + i); throw new Error('after logging');");
    assert!(ran.output.is_err());
    assert_eq!(ran.logs.len(), 101);
    assert!(ran.logs[100].starts_with("… 900 more lines dropped"), "{}", ran.logs[100]);
}

#[test]
fn the_clock_is_frozen_at_the_attempts_start() {
    let out = output("const a = Date.now(); for (let i = 0; i < 100000; i++) {} return [a, Date.now(), new Date().toISOString(), new Date(0).toISOString(), new Date() instanceof Date, typeof Date()];");
    let now = 1_772_366_400_000_i64;
    assert_eq!(out, json!([now, now, "2026-03-01T12:00:00.000Z", "1970-01-01T00:00:00.000Z", true, "string"]));
}

#[test]
fn nothing_outside_the_language_is_reachable() {
    let names = [
        "require",
        "process",
        "fetch",
        "setTimeout",
        "setInterval",
        "performance",
        "std",
        "os",
        "XMLHttpRequest",
        "WebSocket",
        "Deno",
        "Bun",
        "WeakRef",
    ];
    let source = format!("return [{}].map(x => typeof x);", names.map(|n| format!("globalThis.{n}")).join(", "));
    assert_eq!(output(&source), json!(vec!["undefined"; names.len()]));
    let f = failure("return import('fs');", LIMITS);
    assert!(f.message.contains("fs") || f.kind == FailureKind::Output, "{f:?}");
}

#[test]
fn undefined_and_a_missing_return_are_null() {
    assert_eq!(output("return undefined;"), Json::Null);
    assert_eq!(output("let x = 1;"), Json::Null);
    assert_eq!(output("return [undefined, NaN, {skip: undefined, keep: 1}];"), json!([null, null, {"keep": 1}]));
}

#[test]
fn a_value_repeated_without_a_cycle_is_stored() {
    assert_eq!(output("const x = {a: 1}; return [x, {x}];"), json!([{"a": 1}, {"x": {"a": 1}}]));
    assert_eq!(output("return {when: new Date(0)};"), json!({"when": "1970-01-01T00:00:00.000Z"}));
}

#[test]
fn what_json_cannot_hold_is_refused_naming_where() {
    let cases = [
        ("return () => 1;", "a function at output"),
        ("return {a: [1, {f() {}}]};", "a function at output.a[1].f"),
        ("return {s: Symbol('x')};", "a symbol at output.s"),
        ("return {big: 10n};", "a BigInt at output.big"),
        ("const o = {inner: {}}; o.inner.back = o; return o;", "a cycle at output.inner.back"),
    ];
    for (source, problem) in cases {
        let f = failure(source, LIMITS);
        assert_eq!(f.kind, FailureKind::Output, "{source}");
        assert!(f.message.contains(problem), "{source}: {}", f.message);
        assert!(!f.retryable());
    }
    let f = failure("return Promise.resolve(1);", LIMITS);
    assert!(f.message.contains("Promise"), "{f:?}");
}

#[test]
fn a_thrown_error_gives_its_message_and_where() {
    let f = failure("const x = 1;\n  throw new RangeError('too big: ' + x);", LIMITS);
    assert_eq!(f.kind, FailureKind::Thrown);
    let at = f.at.expect("a position");
    assert_eq!(at.line, 2, "{f:?}");
    assert!((3..=39).contains(&at.column), "{f:?}");
    assert_eq!(f.message, format!("RangeError: too big: 1 (line 2, column {})", at.column));
    assert!(f.retryable());
    let f = failure("function inner() { throw new Error('deep'); }\nfunction outer() { inner(); }\nouter();", LIMITS);
    assert!(f.message.starts_with("Error: deep (in inner, line 1, column "), "{f:?}");
    let f = failure("return input.missing.deeper;", LIMITS);
    assert!(f.message.starts_with("TypeError: ") && f.message.contains("line 1"), "{f:?}");
}

#[test]
fn a_thrown_value_that_is_not_an_error_is_shown_as_json() {
    assert_eq!(failure("throw {code: 42};", LIMITS).message, "the script threw {\"code\":42}");
    assert_eq!(failure("throw 'boom';", LIMITS).message, "the script threw \"boom\"");
    assert_eq!(failure("throw undefined;", LIMITS).message, "the script threw undefined");
    let f = failure("throw null;", LIMITS);
    assert_eq!(f.kind, FailureKind::Thrown);
    assert!(f.message.starts_with("the script threw null (or it ran out of its 64 MiB memory limit"), "{f:?}");
}

#[test]
fn an_endless_loop_is_stopped_at_the_time_limit() {
    let limits = Limits { memory_mb: 64, timeout_ms: 150 };
    let started = Instant::now();
    let f = failure("while (true) {}", limits);
    assert_eq!((f.kind, f.message.as_str()), (FailureKind::Time, "script ran longer than its 150 ms limit"));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn neither_finally_nor_catch_can_outlast_the_time_limit() {
    let limits = Limits { memory_mb: 64, timeout_ms: 100 };
    let sources = [
        "try { while (true) {} } finally { return 'escaped'; }",
        "for (;;) { try { while (true) {} } catch (e) { } }",
        "try { while (true) {} } catch (e) { return 'caught'; } finally { while (true) {} }",
        "function spin() { try { spin(); } finally { spin(); } } spin();",
    ];
    for source in sources {
        assert_eq!(failure(source, limits).kind, FailureKind::Time, "{source}");
    }
}

#[test]
fn allocation_bombs_hit_the_memory_limit() {
    let sources = [
        "return 'x'.repeat(1e9).length;",
        "const a = []; for (;;) a.push(new Array(10000).fill(1));",
        "const m = new Map(); for (let i = 0; ; i++) m.set(i, {i});",
        "return new ArrayBuffer(2 ** 30).byteLength;",
    ];
    for source in sources {
        let f = failure(source, Limits { memory_mb: 16, timeout_ms: 5_000 });
        assert_eq!(
            (f.kind, f.message.as_str()),
            (FailureKind::Memory, "script exceeded its 16 MiB memory limit"),
            "{source}"
        );
    }
    // Doubling a string builds a rope, not a copy: QuickJS's own length cap stops it first.
    let f = failure("let s = 'xy'; for (;;) s = s + s;", Limits { memory_mb: 16, timeout_ms: 5_000 });
    assert!(f.message.starts_with("InternalError: string too long"), "{f:?}");
}

#[test]
fn the_smallest_memory_limit_still_runs_a_small_script() {
    let ran = run(&script("return input.a;", Limits { memory_mb: 1, timeout_ms: 1_000 }));
    assert_eq!(ran.output, Ok(json!(2)));
}

#[test]
fn deep_recursion_is_a_stack_overflow() {
    let f = failure("function f(n) { return f(n + 1) + 1; }\nreturn f(0);", LIMITS);
    assert_eq!(f.kind, FailureKind::Stack, "{f:?}");
    assert!(f.message.starts_with("stack overflow"), "{}", f.message);
    let f = failure("let o = {}; for (let i = 0; i < 100000; i++) o = {o}; return o;", LIMITS);
    assert_eq!(f.kind, FailureKind::Output, "{f:?}");
}

#[test]
fn nothing_a_script_leaves_behind_reaches_the_next_run() {
    let source = "globalThis.count = (globalThis.count || 0) + 1; Object.prototype.polluted = true; return count;";
    assert_eq!(output(source), json!(1));
    assert_eq!(output(source), json!(1));
    assert_eq!(output("return ({}).polluted === undefined;"), json!(true));
}

#[test]
fn syntax_errors_name_the_scripts_own_line_and_column() {
    let f = check_syntax("const a = 1;\nconst b = ;\nreturn a;").unwrap_err();
    assert_eq!(f.kind, FailureKind::Syntax);
    assert_eq!(f.at, Some(Position { line: 2, column: 11 }), "{f:?}");
    let f = check_syntax("return )").unwrap_err();
    assert_eq!(f.at.map(|p| p.line), Some(1), "{f:?}");
    assert!(f.at.unwrap().column <= 8, "{f:?}");
    let f = check_syntax("if (input) {\n  return 1;").unwrap_err();
    assert_eq!(f.at.map(|p| p.line), Some(2), "{f:?}");
    assert!(f.message.contains("missing `}`"), "{f:?}");
    assert!(check_syntax("return input.a + 1;").is_ok());
}

#[test]
fn checking_syntax_runs_nothing() {
    // Closes the wrapper early: valid as a module, but its top level must not run when checked.
    let source = "} throw new Error('ran at check'); function again() {";
    assert_eq!(check_syntax(source), Ok(()));
    assert_eq!(failure(source, LIMITS).kind, FailureKind::Thrown);
}
