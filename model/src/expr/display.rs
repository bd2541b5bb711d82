//! How a list or a map reads as text: `["a", 1]` and `{"k": [true, None]}`, as minijinja 2
//! wrote it (Rust's debug quoting), where minijinja 3 writes Python's `['a', 1]`. Templates
//! build URLs, headers and messages out of these, so the text users get must not change
//! under them. A tuple (new in 3) reads as the list it was in 2.
//!
//! Used where our code turns a value into text: `{{ x }}` (the environment's formatter) and
//! the `string`, `join`, `format`, `pprint` and `tojson` filters (`builtins.rs`). The `~`
//! operator turns values into text inside minijinja, out of reach: there a list or a map
//! reads the 3.x way (pinned by a test in `tests.rs`).

use minijinja::value::{ObjectRepr, ValueKind};
use minijinja::{Error, ErrorKind, Output, State, Value};
use std::fmt::{self, Write};

/// `value` as text the way minijinja 2 printed it: strings as they are, containers as Rust's
/// debug form of their items, everything else as minijinja prints it (which has not changed).
pub(super) struct Text<'a>(pub &'a Value);

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match is_container(self.0) {
            true => fmt::Debug::fmt(&Item(self.0), f),
            false => fmt::Display::fmt(self.0, f),
        }
    }
}

/// A value inside a container (or `pprint`ed): strings quoted and escaped as Rust does.
pub(super) struct Item<'a>(pub &'a Value);

impl fmt::Debug for Item<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = self.0;
        if let (ValueKind::String, Some(s)) = (value.kind(), value.as_str()) {
            return fmt::Debug::fmt(s, f);
        }
        let Some(object) = value.as_object().filter(|_| is_container(value)) else {
            return fmt::Debug::fmt(value, f);
        };
        if object.repr() == ObjectRepr::Map {
            let mut map = f.debug_map();
            for (key, item) in object.try_iter_pairs().into_iter().flatten() {
                map.entry(&Item(&key), &Item(&item));
            }
            return map.finish();
        }
        let mut list = f.debug_list();
        for item in object.try_iter().into_iter().flatten() {
            list.entry(&Item(&item));
        }
        list.finish()
    }
}

/// A map, a list or tuple, or an iterable of known length: what 2.x printed item by item
/// (an iterable of unknown length was never walked to be printed, and still is not).
pub(super) fn is_container(value: &Value) -> bool {
    value.as_object().is_some_and(|o| match o.repr() {
        ObjectRepr::Map | ObjectRepr::Seq => true,
        ObjectRepr::Iterable => o.enumerator_len().is_some(),
        _ => false,
    })
}

/// The environment's formatter for `{{ x }}`: containers as 2.x printed them, anything else
/// as minijinja's own formatter does (auto-escaping is off, so nothing is escaped either way).
/// Written straight to the output, which is capped, so a large value stops at the cap.
pub(super) fn format(out: &mut Output<'_>, state: &mut State<'_, '_>, value: &Value) -> Result<(), Error> {
    match is_container(value) {
        true => write!(out, "{}", Text(value)).map_err(|_| Error::new(ErrorKind::WriteFailure, "cannot write")),
        false => minijinja::escape_formatter(out, state, value),
    }
}

/// `value` as a string, as 2.x's `string` filter made it (a string is kept, safe or not).
pub(super) fn string(value: &Value) -> Result<Value, Error> {
    undefined_is_an_error(value)?;
    Ok(match value.kind() {
        ValueKind::String => value.clone(),
        _ => Value::from(Text(value).to_string()),
    })
}

/// 2.x's `join`: every item of `value` as text, with `joiner` between them.
pub(super) fn join(value: &Value, joiner: Option<&str>) -> Result<Value, Error> {
    let items = value.try_iter().map_err(|e| {
        Error::new(ErrorKind::InvalidOperation, format!("cannot join value of type {}", value.kind())).with_source(e)
    })?;
    let mut joined = String::new();
    for (i, item) in items.enumerate() {
        if i > 0 {
            joined.push_str(joiner.unwrap_or_default());
        }
        match item.as_str() {
            Some(s) => joined.push_str(s),
            None => write!(joined, "{}", Text(&item)).map_err(|_| Error::from(ErrorKind::WriteFailure))?,
        }
    }
    Ok(Value::from(joined))
}

/// 2.x's `pprint`: Rust's pretty debug form.
pub(super) fn pprint(value: &Value) -> Value {
    Value::from(format!("{:#?}", Item(value)))
}

/// The arguments of `format` with every container as 2.x's text, so `%s` prints it as 2.x did.
pub(super) fn format_args(args: &[Value]) -> Vec<Value> {
    let as_text = |(i, v): (usize, &Value)| match i > 0 && !v.is_kwargs() && is_container(v) {
        true => Value::from(Text(v).to_string()),
        false => v.clone(),
    };
    args.iter().enumerate().map(as_text).collect()
}

/// 2.x's `tojson`: compact JSON (or indented by `indent`: `true` is 2) with `<`, `>`, `&` and
/// `'` escaped so the result is safe inside HTML too; 3.x spaces its separators instead.
pub(super) fn tojson(value: &Value, indent: Option<usize>) -> Result<Value, Error> {
    let json = match indent {
        None => serde_json::to_string(value),
        Some(width) => {
            let indentation = " ".repeat(width);
            let mut out = Vec::new();
            let pretty = serde_json::ser::PrettyFormatter::with_indent(indentation.as_bytes());
            let mut serializer = serde_json::Serializer::with_formatter(&mut out, pretty);
            serde::Serialize::serialize(value, &mut serializer)
                .map(|()| String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
        }
    };
    let json = json.map_err(|e| Error::new(ErrorKind::InvalidOperation, "cannot serialize to JSON").with_source(e))?;
    let mut safe = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => safe.push_str("\\u003c"),
            '>' => safe.push_str("\\u003e"),
            '&' => safe.push_str("\\u0026"),
            '\'' => safe.push_str("\\u0027"),
            c => safe.push(c),
        }
    }
    Ok(Value::from_safe_string(safe))
}

/// `tojson`'s indentation as 2.x read it: a width, or `true` for 2 and `false` for none.
pub(super) fn indent_of(indent: Option<&Value>) -> Result<Option<usize>, Error> {
    let Some(indent) = indent.filter(|v| !v.is_undefined() && !v.is_none()) else { return Ok(None) };
    if indent.kind() == ValueKind::Bool {
        return Ok(indent.is_true().then_some(2));
    }
    indent.as_usize().map(Some).ok_or_else(|| {
        Error::new(ErrorKind::InvalidOperation, format!("cannot convert {} to an indentation width", indent.kind()))
    })
}

/// Strict undefined: turning a missing value into text is an error, as in 2.x.
fn undefined_is_an_error(value: &Value) -> Result<(), Error> {
    match value.is_undefined() {
        true => Err(Error::from(ErrorKind::UndefinedError)),
        false => Ok(()),
    }
}
