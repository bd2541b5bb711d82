//! The budget of one evaluation: how many steps it may take and how large a string or a
//! sequence it may build. minijinja's fuel counts instructions, but a filter such as `sum`
//! or `join` is one instruction however many items it walks, so the wrapped builtins
//! (`builtins.rs`) charge this meter for every item and byte they read or produce.
//!
//! The meter is per thread and installed for the duration of one top-level call
//! (`eval`, `render`, `render_value`): evaluation is synchronous, so the builtins it calls
//! run on the same thread. No clock and no threads, so the designer's wasm preview meters
//! exactly as the engine does.

use minijinja::value::ValueKind;
use minijinja::{Error, ErrorKind, Value};
use std::cell::RefCell;

/// What one evaluation may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Steps: one per item walked, plus one per 16 bytes of string read or written.
    pub steps: u64,
    /// The largest string an evaluation may build.
    pub max_string_bytes: usize,
    /// The most items a sequence or map may hold.
    pub max_items: usize,
}

impl Limits {
    /// About a quarter of a second of work on a slow core; strings up to 1 MiB (the default
    /// cap on a node's stored output, so a larger one could not be kept anyway); sequences
    /// up to 100,000 items (minijinja's own `range` limit).
    pub const DEFAULT: Limits = Limits { steps: 4_000_000, max_string_bytes: 1 << 20, max_items: 100_000 };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

struct Meter {
    limits: Limits,
    used: u64,
}

thread_local! {
    static METER: RefCell<Option<Meter>> = const { RefCell::new(None) };
}

/// Installs a meter for one top-level evaluation; a nested call shares the outer one, so
/// `render_value` spends one budget over every string it renders.
pub(super) struct Session {
    outermost: bool,
}

impl Session {
    pub(super) fn enter(limits: Limits) -> Session {
        METER.with(|m| {
            let mut m = m.borrow_mut();
            let outermost = m.is_none();
            if outermost {
                *m = Some(Meter { limits, used: 0 });
            }
            Session { outermost }
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.outermost {
            METER.with(|m| *m.borrow_mut() = None);
        }
    }
}

/// The limits in force (the defaults outside an evaluation).
pub(super) fn limits() -> Limits {
    METER.with(|m| m.borrow().as_ref().map_or(Limits::DEFAULT, |m| m.limits))
}

/// Spends `steps`, failing once the budget is used up.
pub(super) fn charge(steps: u64) -> Result<(), Error> {
    METER.with(|m| {
        let mut m = m.borrow_mut();
        let Some(m) = m.as_mut() else { return Ok(()) };
        m.used = m.used.saturating_add(steps);
        if m.used > m.limits.steps {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "the expression used up its budget of {} steps (one per item a filter or loop walks); \
                     work on fewer items, e.g. slice the input first",
                    m.limits.steps
                ),
            ));
        }
        Ok(())
    })
}

pub(super) fn too_long(bytes: u64, cap: usize) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("a string of {bytes} bytes is over the cap of {cap} bytes per string"),
    )
}

pub(super) fn too_long_detail(cap: usize) -> String {
    format!("is over the cap of {cap} bytes per string")
}

pub(super) fn too_many(items: u64, cap: usize) -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("a sequence of {items} items is over the cap of {cap} items per sequence"),
    )
}

/// What walking a value found: bytes of strings, items of sequences and maps, and the
/// deepest nesting.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Size {
    pub bytes: u64,
    pub items: u64,
    pub depth: u64,
}

/// Walks `value`, charging for every item and byte and refusing a string or a sequence over
/// its cap. The length of a sized sequence is checked before anything is walked, so a
/// lazily repeated one (`range(100000) * 100000`) is refused at once.
pub(super) fn measure(value: &Value) -> Result<Size, Error> {
    let mut size = Size::default();
    walk(value, &limits(), 1, &mut size)?;
    Ok(size)
}

/// Like [`measure`], but only the value's own size: one step, and the caps checked on its
/// length, without walking what it holds.
pub(super) fn measure_top(value: &Value) -> Result<Size, Error> {
    charge(1)?;
    let limits = limits();
    let mut size = Size { depth: 1, ..Size::default() };
    match value.kind() {
        ValueKind::String | ValueKind::Bytes => {
            let n = value.as_str().map(str::len).or_else(|| value.as_bytes().map(<[u8]>::len)).unwrap_or(0) as u64;
            if n > limits.max_string_bytes as u64 {
                return Err(too_long(n, limits.max_string_bytes));
            }
            size.bytes = n;
        }
        ValueKind::Seq | ValueKind::Iterable | ValueKind::Map => {
            let n = value.len().unwrap_or(0);
            if n > limits.max_items {
                return Err(too_many(n as u64, limits.max_items));
            }
            size.items = n as u64;
        }
        _ => size.bytes = 8,
    }
    Ok(size)
}

fn walk(value: &Value, limits: &Limits, depth: u64, size: &mut Size) -> Result<(), Error> {
    charge(1)?;
    size.depth = size.depth.max(depth);
    match value.kind() {
        ValueKind::String | ValueKind::Bytes => {
            let n = value.as_str().map(str::len).or_else(|| value.as_bytes().map(<[u8]>::len)).unwrap_or(0) as u64;
            if n > limits.max_string_bytes as u64 {
                return Err(too_long(n, limits.max_string_bytes));
            }
            charge(n / 16)?;
            size.bytes += n;
        }
        ValueKind::Seq | ValueKind::Iterable | ValueKind::Map => {
            if let Some(n) = value.len().filter(|&n| n > limits.max_items) {
                return Err(too_many(n as u64, limits.max_items));
            }
            let is_map = value.kind() == ValueKind::Map;
            let mut count = 0u64;
            for item in value.try_iter()? {
                count += 1;
                if count > limits.max_items as u64 {
                    return Err(too_many(count, limits.max_items));
                }
                walk(&item, limits, depth + 1, size)?;
                if is_map {
                    walk(&value.get_item(&item)?, limits, depth + 1, size)?;
                }
            }
            size.items += count;
        }
        _ => size.bytes += 8,
    }
    Ok(())
}
