//! minijinja's builtin filters, tests and functions, re-registered behind the meter: each
//! call is charged for what it reads (every item and byte of its arguments) and what it
//! returns, a call that would blow a small input up (`join` with a long separator, `indent`
//! with a huge width, `batch(10**9)`) is refused before it allocates, and a result over a
//! cap is refused before it is used. A lazy result is materialized here, once, so what
//! follows walks a list whose size is known. The ones that turn values into text (`string`,
//! `join`, `format`, `pprint`, `tojson`, `debug`) write them as minijinja 2 did (`display.rs`).

use super::display;
use super::meter::{self, Size};
use minijinja::value::{Kwargs, Rest, ValueKind, ValueOrKwargs};
use minijinja::{filters as f, functions as fun, tests as t, Environment, Error, ErrorKind, State, Value};

pub(super) fn install(env: &mut Environment<'static>) {
    let filters: &[(&'static str, Value)] = &[
        ("safe", Value::from_function(f::safe)),
        ("escape", Value::from_function(f::escape)),
        ("e", Value::from_function(f::escape)),
        ("lower", Value::from_function(f::lower)),
        ("upper", Value::from_function(f::upper)),
        ("title", Value::from_function(f::title)),
        ("capitalize", Value::from_function(f::capitalize)),
        ("replace", Value::from_function(f::replace)),
        ("length", Value::from_function(f::length)),
        ("count", Value::from_function(f::length)),
        ("dictsort", Value::from_function(f::dictsort)),
        ("items", Value::from_function(f::items)),
        ("reverse", Value::from_function(f::reverse)),
        ("trim", Value::from_function(f::trim)),
        ("join", Value::from_function(display::join)),
        ("split", Value::from_function(f::split)),
        ("lines", Value::from_function(f::lines)),
        ("default", Value::from_function(f::default)),
        ("d", Value::from_function(f::default)),
        ("round", Value::from_function(f::round)),
        ("abs", Value::from_function(f::abs)),
        ("int", Value::from_function(f::int)),
        ("float", Value::from_function(f::float)),
        ("attr", Value::from_function(f::attr)),
        ("first", Value::from_function(f::first)),
        ("last", Value::from_function(f::last)),
        ("min", Value::from_function(f::min)),
        ("max", Value::from_function(f::max)),
        ("sort", Value::from_function(f::sort)),
        ("list", Value::from_function(f::list)),
        ("string", Value::from_function(display::string)),
        ("bool", Value::from_function(f::bool)),
        ("batch", Value::from_function(f::batch)),
        ("slice", Value::from_function(f::slice)),
        ("sum", Value::from_function(f::sum)),
        ("indent", Value::from_function(f::indent)),
        ("select", Value::from_function(f::select)),
        ("reject", Value::from_function(f::reject)),
        ("selectattr", Value::from_function(f::selectattr)),
        ("rejectattr", Value::from_function(f::rejectattr)),
        ("map", Value::from_function(f::map)),
        ("groupby", Value::from_function(f::groupby)),
        ("unique", Value::from_function(f::unique)),
        ("chain", Value::from_function(f::chain)),
        ("zip", Value::from_function(f::zip)),
        ("pprint", Value::from_function(display::pprint)),
        ("format", Value::from_function(format)),
        ("tojson", Value::from_function(tojson)),
        ("urlencode", Value::from_function(f::urlencode)),
    ];
    for (name, original) in filters {
        env.add_filter(*name, metered(name, original.clone()));
    }
    // Tests that compare or search walk their arguments (`x is in(big)`, `a is eq(b)`).
    let tests: &[(&'static str, Value)] = &[
        ("in", Value::from_function(t::is_in)),
        ("eq", Value::from_function(t::is_eq)),
        ("equalto", Value::from_function(t::is_eq)),
        ("==", Value::from_function(t::is_eq)),
        ("ne", Value::from_function(t::is_ne)),
        ("!=", Value::from_function(t::is_ne)),
        ("lt", Value::from_function(t::is_lt)),
        ("lessthan", Value::from_function(t::is_lt)),
        ("<", Value::from_function(t::is_lt)),
        ("le", Value::from_function(t::is_le)),
        ("<=", Value::from_function(t::is_le)),
        ("gt", Value::from_function(t::is_gt)),
        ("greaterthan", Value::from_function(t::is_gt)),
        (">", Value::from_function(t::is_gt)),
        ("ge", Value::from_function(t::is_ge)),
        (">=", Value::from_function(t::is_ge)),
    ];
    for (name, original) in tests {
        let original = original.clone();
        env.add_test(*name, move |state: &mut State<'_, '_>, args: Rest<ValueOrKwargs>| -> Result<bool, Error> {
            let args = args.into_values();
            for arg in &args {
                meter::measure(arg)?;
            }
            Ok(original.call(state, &args)?.is_true())
        });
    }
    let functions: &[(&'static str, Value)] = &[
        ("range", Value::from_function(fun::range)),
        ("dict", Value::from_function(fun::dict)),
        ("debug", Value::from_function(debug)),
        ("namespace", Value::from_function(fun::namespace)),
    ];
    for (name, original) in functions {
        env.add_function(*name, metered(name, original.clone()));
    }
}

/// minijinja's `format`, with the lists and maps it prints written as 2.x wrote them.
fn format(state: &mut State<'_, '_>, args: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    Value::from_function(f::format).call(state, &display::format_args(&args.into_values()))
}

/// 2.x's `tojson`: `indent` positional or by keyword.
fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent = match indent {
        Some(indent) => Some(indent),
        None => kwargs.get::<Option<Value>>("indent")?,
    };
    kwargs.assert_all_used()?;
    display::tojson(value, display::indent_of(indent.as_ref())?)
}

/// `debug(x, ...)` shows its arguments as 2.x did; `debug()` shows the whole state as 3.x does.
fn debug(state: &mut State<'_, '_>, args: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = args.into_values();
    Ok(Value::from(match args.as_slice() {
        [] => format!("{state:#?}"),
        [one] => format!("{:#?}", display::Item(one)),
        many => format!("{:#?}", many.iter().map(display::Item).collect::<Vec<_>>()),
    }))
}

/// Builtins that look at most at the top of their arguments (a length, one item): charged
/// for that, not for walking the whole value, so `{{ input.items | length }}` in a loop stays
/// cheap. Their arguments' top-level sizes are still checked against the caps.
const SHALLOW: &[&str] = &[
    "length",
    "count",
    "first",
    "last",
    "default",
    "d",
    "attr",
    "bool",
    "safe",
    "int",
    "float",
    "abs",
    "round",
    "namespace",
];

/// `original` behind the meter: arguments measured and checked for blow-up, the result
/// measured and materialized.
fn metered(
    name: &'static str,
    original: Value,
) -> impl Fn(&mut State<'_, '_>, Rest<ValueOrKwargs>) -> Result<Value, Error> + Send + Sync + 'static {
    let measure = if SHALLOW.contains(&name) { meter::measure_top } else { meter::measure };
    move |state: &mut State<'_, '_>, args: Rest<ValueOrKwargs>| {
        let args = args.into_values();
        refuse_undefined(name, args.first())?;
        let sizes = args.iter().map(measure).collect::<Result<Vec<_>, _>>()?;
        refuse_blow_up(name, &args, &sizes)?;
        let result = original.call(state, &args)?;
        let result = materialized(result)?;
        meter::measure(&result)?;
        Ok(result)
    }
}

/// The builtins minijinja 3 lets take an undefined value quietly (`length` is 0, `first` is
/// undefined) unless they are its own registrations: they fail as they did in 2.x, so a typo
/// fails the node instead of counting nothing.
fn refuse_undefined(name: &str, value: Option<&Value>) -> Result<(), Error> {
    let detail = match name {
        "length" | "count" => "cannot calculate length of value of type undefined",
        "first" => "cannot get first item from value",
        "last" => "cannot get last item from value",
        "items" => "cannot convert value into pairs",
        _ => return Ok(()),
    };
    match value.is_some_and(Value::is_undefined) {
        true => Err(Error::new(ErrorKind::InvalidOperation, detail)),
        false => Ok(()),
    }
}

/// A lazy sequence (`map`, `select`, `reverse` may return one) as a list, counted as it is
/// collected so an endless or enormous one stops at the cap.
fn materialized(value: Value) -> Result<Value, Error> {
    if value.kind() != ValueKind::Iterable {
        return Ok(value);
    }
    let cap = meter::limits().max_items;
    let mut items = Vec::new();
    for item in value.try_iter()? {
        if items.len() == cap {
            return Err(meter::too_many(cap as u64 + 1, cap));
        }
        meter::charge(1)?;
        items.push(item);
    }
    Ok(Value::from(items))
}

/// The builtins whose output can be far larger than their input, with a bound on that output
/// computed from the arguments, checked before they run.
fn refuse_blow_up(name: &str, args: &[Value], sizes: &[Size]) -> Result<(), Error> {
    let limits = meter::limits();
    let input = sizes.first().copied().unwrap_or_default();
    let text = |i: usize| args.get(i).filter(|v| !v.is_kwargs()).and_then(Value::as_str).map_or(0, |s| s.len() as u64);
    let number = |i: usize, key: &str| {
        let positional = args.get(i).filter(|v| !v.is_kwargs()).cloned();
        let keyword =
            args.last().filter(|v| v.is_kwargs()).and_then(|k| k.get_attr(key).ok()).filter(|v| !v.is_undefined());
        positional.or(keyword).and_then(|v| v.as_usize()).unwrap_or(0) as u64
    };
    let (bytes, items) = match name {
        "join" => (input.bytes.saturating_add(input.items.saturating_mul(text(1))), 0),
        "replace" => {
            let (from, to) = (text(1).max(1), text(2));
            (input.bytes.saturating_add((input.bytes / from + 1).saturating_mul(to)), 0)
        }
        "indent" => {
            let lines = args.first().and_then(Value::as_str).map_or(1, |s| s.matches('\n').count() as u64 + 1);
            (input.bytes.saturating_add(lines.saturating_mul(number(1, "width"))), 0)
        }
        "batch" | "slice" => (0, input.items.saturating_add(number(1, "count"))),
        "format" => {
            let widths: u64 = args.first().and_then(Value::as_str).map_or(0, |s| {
                s.split(|c: char| !c.is_ascii_digit())
                    .filter_map(|d| d.parse::<u64>().ok())
                    .fold(0, u64::saturating_add)
            });
            (sizes.iter().map(|s| s.bytes).fold(widths, u64::saturating_add), 0)
        }
        "tojson" | "pprint" => {
            let indent = if name == "pprint" { 4 } else { number(1, "indent") };
            let per_item = 8u64.saturating_add(indent.saturating_mul(input.depth));
            // Escaping grows text by a bounded factor, checked on the result; the
            // indentation grows with depth, which is what can explode.
            (input.bytes.saturating_add(input.items.saturating_mul(per_item)), 0)
        }
        _ => (0, 0),
    };
    if bytes > limits.max_string_bytes as u64 {
        return Err(meter::too_long(bytes, limits.max_string_bytes));
    }
    if items > limits.max_items as u64 {
        return Err(meter::too_many(items, limits.max_items));
    }
    Ok(())
}
