//! Expressions and templates in node configs, with minijinja: `input.user.id`,
//! `nodes.fetch.output.body.items | length`, and `{{ ... }}` inside strings.
//!
//! Evaluation is strict: a reference to something that does not exist is an error naming
//! it, so a typo fails the node instead of sending `""` somewhere. It is bounded: fuel caps
//! the instructions run and the data built, the meter (`meter.rs`) caps the items and bytes
//! the builtins walk and the size of every string and sequence they build, and a rendered
//! template and an expression's result are capped the same way. Values read as text the way
//! they did under minijinja 2 (`display.rs`).
//!
//! It lives in the model so the engine and the designer's preview (in wasm) evaluate with
//! one configuration: what the preview shows is what a run computes.

mod builtins;
mod display;
mod meter;
pub mod scope;

pub use meter::Limits;

use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde_json::Value;

/// minijinja's fuel for one evaluation. Since minijinja 3 it pays for data as well as steps:
/// one per instruction run, one per 64 bytes of text (or per two list slots) built, written or
/// walked. It is the backstop behind the limits users are told about: the meter's caps here,
/// and in a worker the sandbox's memory and time. So it must outlast them: 2^25 pays for 2 GiB
/// of data, eight times the sandbox's default memory, so a value too large to build meets the
/// memory limit (and its message) first, and a run of instructions that long takes seconds.
/// In the designer's preview, which has no sandbox, it is what stops a runaway loop: 33 million
/// instructions (2.x counted 200,000 instructions alone, and nothing for data).
const FUEL: u64 = 1 << 25;

pub struct Expressions {
    env: Environment<'static>,
    limits: Limits,
}

impl Default for Expressions {
    fn default() -> Self {
        Expressions::new(Limits::DEFAULT)
    }
}

impl Expressions {
    pub fn new(limits: Limits) -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_fuel(Some(FUEL));
        env.set_formatter(display::format);
        builtins::install(&mut env);
        Expressions { env, limits }
    }

    /// Compiles an expression without evaluating it: only syntax errors.
    pub fn check(&self, expression: &str) -> Result<(), String> {
        self.env.compile_expression(expression).map(drop).map_err(|e| located(expression, &e))
    }

    /// Compiles a template (`https://x/{{ input.id }}`) without rendering it: only syntax
    /// errors. A text without template syntax is plain text, as [`Expressions::render`] takes it.
    pub fn check_template(&self, template: &str) -> Result<(), String> {
        if !is_template(template) {
            return Ok(());
        }
        self.env.template_from_str(template).map(drop).map_err(|e| located(template, &e))
    }

    /// Compiles `text` as what it is.
    pub fn check_text(&self, text: crate::validate::Text<'_>) -> Result<(), String> {
        match text {
            crate::validate::Text::Expression(expression) => self.check(expression),
            crate::validate::Text::Template(template) => self.check_template(template),
        }
    }

    /// Evaluates an expression (no braces) to a JSON value.
    pub fn eval(&self, expression: &str, context: &Value) -> Result<Value, String> {
        let _metered = meter::Session::enter(self.limits);
        let compiled = self.env.compile_expression(expression).map_err(|e| describe("invalid expression", &e))?;
        let value = compiled.eval(Serde(context)).map_err(|e| describe("expression failed", &e))?;
        // Measured before it is serialized: a lazily repeated sequence must not be walked
        // to the end to find out it is too large.
        meter::measure(&value).map_err(|e| describe("expression failed", &e))?;
        serde_json::to_value(&value).map_err(|e| format!("expression result is not JSON: {e}"))
    }

    /// Renders `{{ ... }}` in a string; strings without template syntax are returned as they are.
    pub fn render(&self, template: &str, context: &Value) -> Result<String, String> {
        if !is_template(template) {
            return Ok(template.to_owned());
        }
        let _metered = meter::Session::enter(self.limits);
        let compiled = self.env.template_from_str(template).map_err(|e| describe("template failed", &e))?;
        let mut out = Capped { bytes: Vec::new(), cap: self.limits.max_string_bytes, overflowed: false };
        compiled.render_captured_to(Serde(context), &mut out).map(drop).map_err(|e| match out.overflowed {
            true => format!("template failed: the output {}", meter::too_long_detail(out.cap)),
            false => describe("template failed", &e),
        })?;
        String::from_utf8(out.bytes).map_err(|e| format!("template failed: the output is not UTF-8: {e}"))
    }

    /// Renders every string inside a JSON value, on one budget.
    pub fn render_value(&self, value: &Value, context: &Value) -> Result<Value, String> {
        let _metered = meter::Session::enter(self.limits);
        Ok(match value {
            Value::String(s) => Value::String(self.render(s, context)?),
            Value::Array(items) => {
                Value::Array(items.iter().map(|v| self.render_value(v, context)).collect::<Result<_, _>>()?)
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| Ok((k.clone(), self.render_value(v, context)?)))
                    .collect::<Result<_, String>>()?,
            ),
            other => other.clone(),
        })
    }
}

/// A rendered template's output, refused past the string cap instead of growing.
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
    overflowed: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > self.cap {
            self.overflowed = true;
            return Err(std::io::Error::other("over the cap"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether `text` holds template syntax; one without is plain text, never compiled.
pub fn is_template(text: &str) -> bool {
    text.contains("{{") || text.contains("{%") || text.contains("{#")
}

/// A syntax error of `text` as a person fixes it: where (line and column, counted from 1)
/// and what (`line 1, column 9: syntax error: unexpected end of input, expected `}``).
fn located(text: &str, e: &minijinja::Error) -> String {
    let what = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    let Some(start) = e.range().map(|r| r.start.min(text.len())) else {
        return match e.line() {
            Some(line) => format!("line {line}: {what}"),
            None => what,
        };
    };
    let before = text.get(..start).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!("line {line}, column {column}: {what}")
}

fn describe(what: &str, e: &minijinja::Error) -> String {
    match e.detail() {
        Some(detail) => format!("{what}: {} ({detail})", e.kind()),
        None => format!("{what}: {}", e.kind()),
    }
}

#[cfg(test)]
mod tests;
