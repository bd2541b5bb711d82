use super::*;
use serde::Deserialize;

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Inner {
    #[serde(default)]
    n: i64,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct Outer {
    #[serde(default)]
    inner: Inner,
    #[serde(default)]
    list: Vec<Inner>,
    #[serde(default)]
    maybe: Option<Inner>,
}

fn shape(body: &str) -> String {
    match from_slice::<Outer>(body.as_bytes(), "body") {
        Err(BodyError::Shape { detail, .. }) => detail,
        other => panic!("{body}: expected a shape error, got {other:?}"),
    }
}

#[test]
fn objects_parse_as_serde_json_would() {
    let parsed: Outer = from_slice(br#"{"inner": {"n": 2}, "list": [{"n": 3}], "maybe": {"n": 4}}"#, "body").unwrap();
    assert_eq!(parsed.list, vec![Inner { n: 3 }]);
    assert_eq!(parsed.maybe, Some(Inner { n: 4 }));
    assert_eq!(from_slice::<Outer>(b" {} ", "body").unwrap(), Outer::default());
}

#[test]
fn an_array_or_a_scalar_is_refused_where_an_object_is_required_at_any_depth() {
    for body in ["[]", "[1]", "\"x\"", "1", "-1", "null", "true"] {
        assert!(shape(body).contains("must be a JSON object"), "{body}");
    }
    for body in [r#"{"inner": []}"#, r#"{"list": [[]]}"#, r#"{"maybe": []}"#, r#"{"inner": [5]}"#] {
        assert!(shape(body).contains("expected a JSON object"), "{body}: {}", shape(body));
    }
    assert!(matches!(from_slice::<Outer>(b"{", "body"), Err(BodyError::Syntax(_))));
    assert!(matches!(from_slice::<Outer>(b"", "body"), Err(BodyError::Syntax(_))));
    assert!(matches!(from_slice::<Outer>(b"{} x", "body"), Err(BodyError::Syntax(_))));
}

#[test]
fn a_whole_float_is_taken_as_an_integer_and_a_fraction_is_refused_naming_the_field() {
    let parsed: Outer = from_slice(br#"{"inner": {"n": 7129.0}, "list": [{"n": -3.0}]}"#, "body").unwrap();
    assert_eq!((parsed.inner.n, parsed.list[0].n), (7129, -3));
    match from_slice::<Outer>(br#"{"list": [{"n": 1}, {"n": 7129.5}]}"#, "body") {
        Err(BodyError::Shape { detail, path, code }) => {
            assert_eq!((path.as_deref(), code), (Some("list[1].n"), "invalid_field"));
            assert!(detail.contains("7129.5") && detail.contains("`list[1].n`"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    // Whole, but past what the field holds: refused by its range, not wrapped around.
    assert!(from_slice::<Outer>(br#"{"inner": {"n": 1e19}}"#, "body").is_err());
    assert!(from_slice::<Outer>(br#"{"inner": {"n": 1e300}}"#, "body").is_err());
    // A float where a float is asked for is left alone.
    let v: serde_json::Map<String, Value> = from_slice(br#"{"x": 7129.0}"#, "body").unwrap();
    assert_eq!(v["x"].as_f64(), Some(7129.0));
    assert!(v["x"].is_f64());
    let n: Option<u32> = from_value(serde_json::json!(8.0), "count").unwrap();
    assert_eq!(n, Some(8));
}

#[test]
fn a_nul_is_refused_naming_its_path_and_an_escaped_backslash_is_not_a_nul() {
    let v: Value = serde_json::from_str(r#"{"a": [{"b": "x\u0000"}]}"#).unwrap();
    assert_eq!(nul_path(&v).as_deref(), Some("a[0].b"));
    let v: Value = serde_json::from_str(r#"{"ok": 1, "k\u0000": 1}"#).unwrap();
    assert_eq!(nul_path(&v).as_deref(), Some("k\\u0000"));
    assert_eq!(nul_path(&Value::String("\0".into())).as_deref(), Some("$"));
    assert!(refuse_nul(br#"{"text": "\\u0000"}"#).is_ok(), "a literal backslash-u is no NUL");
    match from_slice::<serde_json::Map<String, Value>>(br#"{"deep": {"list": ["\u0000"]}}"#, "body") {
        Err(BodyError::Shape { path, .. }) => assert_eq!(path.as_deref(), Some("deep.list[0]")),
        other => panic!("{other:?}"),
    }
}
