//! One run of a script: a JavaScript function body in QuickJS (through `rquickjs`), in a
//! fresh runtime and context made for that run and dropped after it.
//!
//! Why QuickJS: it is a sandbox by construction, not by filtering. A context holds the
//! language and its standard objects and nothing else — no file system, network, environment,
//! timers or module loader unless the host adds them, and this host adds only `console` (into
//! a bounded buffer) and a `Date` frozen at the attempt's start. Its runtime has a hard memory
//! limit (an allocation past it fails inside the script), a stack limit, and an interrupt
//! handler the interpreter polls, which ends the run with an exception that no `catch` or
//! `finally` in the script can stop. `boa_engine` (pure Rust) has no memory limit: one
//! `new Array(1e8).fill(0)` would take the whole process down. And n8n's vm2 shows where hiding a
//! host language's objects from a script leads. A runtime per run means nothing a script
//! leaves behind reaches the next one, and dropping it frees everything the run allocated.
//!
//! The source is the body of `export default function (input, nodes, instance, item, index)
//! { ... }` (`item` and `index` are a `map` item's, else `null`), a
//! module, so [`check_syntax`] can compile it without running a line of it, and the line
//! numbers a script sees are its own (the head shares the first line).

mod logs;

use crate::sandbox::script::{Failure, FailureKind, Limits, Position, Ran, Script};
use chrono::{DateTime, Utc};
use logs::Logs;
use rquickjs::context::intrinsic;
use rquickjs::{Context, Ctx, Function, Module, Runtime, Value};
use serde_json::Value as Json;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The module's name: it is what stack traces name as the file.
const NAME: &str = "script";
/// Put before the script's first line: the script is this function's body.
const HEAD: &str = "export default function (input, nodes, instance, item, index) {";
/// The interpreter's stack limit: bounds recursion well inside the worker's main-thread stack.
pub const STACK_BYTES: usize = 1024 * 1024;
const MIB: usize = 1024 * 1024;
const PRELUDE: &str = include_str!("quickjs/prelude.js");
const THREW_NULL: &str = "the script threw null";

/// The standard objects a script gets. Left out: `performance` (a clock), `WeakRef` and
/// `FinalizationRegistry` (garbage-collector timing), `DOMException` (nothing throws it).
/// `Eval` is what compiles source at all (it also gives scripts `eval`, harmless in here).
type Intrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
);

/// Runs `script` to the end or to a limit, on this thread.
pub fn run(script: &Script) -> Ran {
    let logs = Rc::new(RefCell::new(Logs::default()));
    let output = Sandbox::new(script.limits).and_then(|sandbox| sandbox.run(script, &logs));
    let logs = std::mem::take(&mut *logs.borrow_mut()).finish();
    Ran { output, logs }
}

/// Compiles `source` as a script body without running any of it: `Err` is the first syntax
/// error with its position in the source.
pub fn check_syntax(source: &str) -> Result<(), Failure> {
    let limits = Limits { memory_mb: 64, timeout_ms: 1_000 };
    let sandbox = Sandbox::new(limits)?;
    sandbox.context.with(|ctx| declare(&ctx, source, &sandbox).map(drop))
}

struct Sandbox {
    context: Context,
    /// Set by the interrupt handler when it stops the run.
    interrupted: Arc<AtomicBool>,
    limits: Limits,
    /// Owns the heap; dropped after the context.
    _runtime: Runtime,
}

impl Sandbox {
    fn new(limits: Limits) -> Result<Sandbox, Failure> {
        let runtime =
            Runtime::new().map_err(|e| Failure::new(FailureKind::Engine, format!("no JavaScript runtime: {e}")))?;
        runtime.set_memory_limit((limits.memory_mb as usize).saturating_mul(MIB));
        runtime.set_max_stack_size(STACK_BYTES);
        let interrupted = Arc::new(AtomicBool::new(false));
        let deadline = Instant::now() + Duration::from_millis(limits.timeout_ms);
        let flag = interrupted.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || {
            let over = Instant::now() >= deadline;
            if over {
                flag.store(true, Ordering::Relaxed);
            }
            over
        })));
        // A context that does not fit in the limit is the limit's doing.
        let context = Context::custom::<Intrinsics>(&runtime).map_err(|_| Failure::memory(limits))?;
        Ok(Sandbox { context, interrupted, limits, _runtime: runtime })
    }

    fn run(&self, script: &Script, logs: &Rc<RefCell<Logs>>) -> Result<Json, Failure> {
        let output = self.context.with(|ctx| {
            let check = self.prelude(&ctx, script.now, logs.clone()).map_err(|e| self.failure(&ctx, e))?;
            let module = declare(&ctx, &script.source, self)?;
            let main = evaluate(module).map_err(|e| self.failure(&ctx, e))?;
            let returned = self.call(&ctx, &main, script).map_err(|e| self.failure(&ctx, e))?;
            self.output(&ctx, &check, returned)
        });
        output.map_err(|failure| self.null_thrown(failure, &script.source))
    }

    /// Out of memory even for its error object, QuickJS throws `null` instead, which the
    /// script might have thrown itself. By the time the run returns the heap has been let go,
    /// so it cannot tell; the source can: a script that never says `throw` threw nothing.
    fn null_thrown(&self, failure: Failure, source: &str) -> Failure {
        if failure.kind != FailureKind::Thrown || failure.message != THREW_NULL {
            return failure;
        }
        if !source.contains("throw") {
            return Failure::memory(self.limits);
        }
        let message = format!(
            "{THREW_NULL} (or it ran out of its {} MiB memory limit: QuickJS throws null when \
             there is no memory left even for the error)",
            self.limits.memory_mb
        );
        Failure { message, ..failure }
    }

    /// Installs `console` and the frozen `Date`; returns the return-value check.
    fn prelude<'js>(
        &self,
        ctx: &Ctx<'js>,
        now: DateTime<Utc>,
        logs: Rc<RefCell<Logs>>,
    ) -> rquickjs::Result<Function<'js>> {
        let sink = Function::new(ctx.clone(), move |level: String, text: Option<String>| {
            logs.borrow_mut().push(&level, text)
        })?;
        let prelude: Function<'js> = ctx.eval(PRELUDE)?;
        prelude.call((sink, now.timestamp_millis() as f64))
    }

    fn call<'js>(&self, ctx: &Ctx<'js>, main: &Function<'js>, script: &Script) -> rquickjs::Result<Value<'js>> {
        let input = ctx.json_parse(script.input.to_string())?;
        let nodes = ctx.json_parse(script.nodes.to_string())?;
        let instance = ctx.json_parse(script.instance.to_string())?;
        let item = ctx.json_parse(script.item.to_string())?;
        let index = ctx.json_parse(script.index.to_string())?;
        main.call((input, nodes, instance, item, index))
    }

    /// The returned value as JSON: `undefined` is `null`; what JSON cannot hold is refused,
    /// naming where it is, rather than silently dropped as `JSON.stringify` would.
    fn output<'js>(&self, ctx: &Ctx<'js>, check: &Function<'js>, value: Value<'js>) -> Result<Json, Failure> {
        if value.is_undefined() {
            return Ok(Json::Null);
        }
        if value.is_promise() {
            return Err(Failure::new(
                FailureKind::Output,
                "the script returned a Promise; scripts run synchronously, so return the value itself",
            ));
        }
        let problem: Option<String> = check.call((value.clone(),)).map_err(|e| self.output_failure(ctx, e))?;
        if let Some(problem) = problem {
            return Err(Failure::new(
                FailureKind::Output,
                format!("the script's return value cannot be stored as JSON: {problem}"),
            ));
        }
        let text = ctx.json_stringify(value).map_err(|e| self.output_failure(ctx, e))?;
        let Some(text) = text else { return Ok(Json::Null) };
        let text = text.to_string().map_err(|e| self.failure(ctx, e))?;
        serde_json::from_str(&text)
            .map_err(|e| Failure::new(FailureKind::Output, format!("the script's return value is not JSON: {e}")))
    }

    /// A failure while checking or converting the return value: a limit, or (anything
    /// thrown there) a value JSON cannot take.
    fn output_failure(&self, ctx: &Ctx<'_>, error: rquickjs::Error) -> Failure {
        let failure = self.failure(ctx, error);
        match failure.kind {
            FailureKind::Thrown => Failure::new(
                FailureKind::Output,
                format!("the script's return value cannot be stored as JSON: {}", failure.message),
            ),
            FailureKind::Stack => {
                Failure::new(FailureKind::Output, "the script's return value is nested too deeply to be stored as JSON")
            }
            _ => failure,
        }
    }

    /// What an error of the engine means for the script.
    fn failure(&self, ctx: &Ctx<'_>, error: rquickjs::Error) -> Failure {
        if self.interrupted.load(Ordering::Relaxed) {
            return Failure::new(
                FailureKind::Time,
                format!("script ran longer than its {} ms limit", self.limits.timeout_ms),
            );
        }
        match error {
            rquickjs::Error::Exception => self.thrown(ctx, ctx.catch()),
            rquickjs::Error::Allocation => Failure::memory(self.limits),
            other => Failure::new(FailureKind::Engine, format!("the script engine failed: {other}")),
        }
    }

    fn thrown<'js>(&self, ctx: &Ctx<'js>, value: Value<'js>) -> Failure {
        if let Some(error) = value.as_exception() {
            let name: String = error.get("name").unwrap_or_else(|_| "Error".to_owned());
            let message = error.message().unwrap_or_default();
            let stack = error.stack();
            let at = stack.as_deref().and_then(position);
            let place = where_in(stack.as_deref());
            return match (name.as_str(), message.as_str()) {
                ("InternalError", "out of memory") => Failure::memory(self.limits),
                ("RangeError", "Maximum call stack size exceeded") => Failure {
                    kind: FailureKind::Stack,
                    message: format!("stack overflow: calls nested too deeply{place}"),
                    at,
                },
                _ => Failure { kind: FailureKind::Thrown, message: format!("{name}: {message}{place}"), at },
            };
        }
        let shown = match ctx.json_stringify(value.clone()) {
            Ok(Some(json)) => json.to_string().unwrap_or_default(),
            _ if value.is_undefined() => "undefined".to_owned(),
            _ => format!("a {}", value.type_name()),
        };
        Failure::new(FailureKind::Thrown, format!("the script threw {shown}"))
    }
}

/// Compiles the script as its module, without evaluating it.
fn declare<'js>(ctx: &Ctx<'js>, source: &str, sandbox: &Sandbox) -> Result<Module<'js>, Failure> {
    let wrapped = format!("{HEAD}{source}\n}}\n");
    Module::declare(ctx.clone(), NAME, wrapped).map_err(|error| {
        let failure = sandbox.failure(ctx, error);
        if failure.kind != FailureKind::Thrown {
            return failure;
        }
        let at = failure.at.map(|at| clamp(at, source));
        let message = failure.message.strip_prefix("SyntaxError: ").unwrap_or(&failure.message);
        let message = message.split(" (line ").next().unwrap_or(message);
        // What the parser says when the script ends inside a block or a call.
        let message = match message.strip_suffix(": ''") {
            Some(_) => "the script ends too early (a missing `}` or `)`?)".to_owned(),
            None => message.to_owned(),
        };
        Failure { kind: FailureKind::Syntax, message, at }
    })
}

/// Evaluates the declared module (which only defines the function) and returns it.
fn evaluate<'js>(module: Module<'js>) -> rquickjs::Result<Function<'js>> {
    let (module, done) = module.eval()?;
    done.finish::<()>()?;
    module.get("default")
}

/// The first frame of a QuickJS stack (`    at f (script:3:9)`, or `    at script:3:9` for a
/// syntax error) that is in the script: the function's name (unless it is the script itself
/// or unnamed) and the script's own line and column. The head shares the first line, so that
/// line's columns move back.
fn frame(stack: &str) -> Option<(Option<&str>, Position)> {
    let marker = format!("{NAME}:");
    stack.lines().find_map(|line| {
        let frame = line.trim_start().strip_prefix("at ")?;
        let (name, rest) = match frame.strip_prefix(&marker) {
            Some(rest) => ("", rest),
            None => frame.split_once(&format!("({marker}"))?,
        };
        let mut numbers = rest.split(|c: char| !c.is_ascii_digit());
        let line: u32 = numbers.next()?.parse().ok()?;
        let column: u32 = numbers.next()?.parse().ok()?;
        let column = if line == 1 { column.saturating_sub(HEAD.len() as u32).max(1) } else { column };
        let name = name.trim();
        let named = !matches!(name, "" | "default" | "<anonymous>" | "<eval>");
        Some((named.then_some(name), Position { line, column }))
    })
}

fn position(stack: &str) -> Option<Position> {
    frame(stack).map(|(_, at)| at)
}

/// ` (in f, line 3, column 9)`, or as much of it as is known.
fn where_in(stack: Option<&str>) -> String {
    match stack.and_then(frame) {
        Some((Some(name), at)) => format!(" (in {name}, line {}, column {})", at.line, at.column),
        Some((None, at)) => located(Some(at)),
        None => String::new(),
    }
}

/// A position past the script's end (an unclosed brace is found at the closing line the
/// wrapper adds) is the end of the script.
fn clamp(at: Position, source: &str) -> Position {
    let lines = source.split('\n').count() as u32;
    if at.line <= lines {
        return at;
    }
    let last = source.rsplit('\n').next().unwrap_or_default();
    Position { line: lines, column: last.chars().count() as u32 + 1 }
}

fn located(at: Option<Position>) -> String {
    at.map(|p| format!(" (line {}, column {})", p.line, p.column)).unwrap_or_default()
}

#[cfg(test)]
mod tests;
