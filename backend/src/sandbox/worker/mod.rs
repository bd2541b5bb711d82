//! The sandbox worker: `trellis sandbox-worker`, a process the server starts to run user
//! code. It confines itself first (`confine.rs`), says it is ready, then answers one request
//! at a time from standard input on standard output until the input ends. It holds nothing
//! between requests but the compiled-in expression environment, so a worker can be killed
//! and replaced at any moment without losing anything.
//!
//! This is the only place expressions are compiled or evaluated, and scripts run, for the
//! server: the server's own code cannot reach `trellis_model::expr` (clippy's
//! `disallowed-methods`, see `clippy.toml`), and QuickJS is only linked in from here.

mod confine;
mod folding;
mod quickjs;

pub use confine::WorkerLimits;

use super::protocol::{self, Answer, Job, Request, MAX_REQUEST_BYTES};
use super::script::{Failure, FailureKind, Ran, Script};
use serde_json::Value;
use std::io::Write;
use std::process::ExitCode;
use trellis_model::expr::Expressions;

/// Of a worker's memory, what a script is not given: room for the request, its JSON and
/// the answer, outside the script's heap.
const WORKER_OWN_MIB: u64 = 32;

/// Runs the worker until its input ends. Never starts a thread or an async runtime.
pub fn main(limits: WorkerLimits) -> ExitCode {
    let ready = match confine::apply(&limits) {
        Ok(ready) => ready,
        Err(e) => {
            eprintln!("trellis sandbox-worker: cannot confine itself: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut input = std::io::stdin().lock();
    let mut output = std::io::BufWriter::new(std::io::stdout().lock());
    if protocol::write_message(&mut output, &ready).is_err() {
        return ExitCode::FAILURE;
    }
    #[allow(clippy::disallowed_methods)] // the one place expressions are evaluated
    let expressions = Expressions::default();
    loop {
        let body = match protocol::read_frame(&mut input, MAX_REQUEST_BYTES) {
            Ok(Some(body)) => body,
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("trellis sandbox-worker: cannot read a request: {e}");
                return ExitCode::FAILURE;
            }
        };
        let request: Request = match protocol::decode(&body) {
            Ok(request) => request,
            Err(e) => {
                eprintln!("trellis sandbox-worker: {e}");
                return ExitCode::FAILURE;
            }
        };
        drop(body);
        confine::limit_cpu_for(request.deadline_ms());
        let answer = answer(&expressions, request, limits.memory_mib);
        if protocol::write_message(&mut output, &answer).and_then(|()| output.flush()).is_err() {
            return ExitCode::FAILURE;
        }
    }
}

#[allow(clippy::disallowed_methods)] // the one place expressions are evaluated
fn answer(expressions: &Expressions, request: Request, memory_mib: u64) -> Answer {
    match request {
        Request::Evaluate { context, jobs, max_result_bytes, .. } => {
            let values = evaluate(expressions, &context, &jobs);
            Answer::Evaluated(values.and_then(|v| within(v, max_result_bytes, "the result")))
        }
        Request::Script { script, max_result_bytes, .. } => {
            let mut ran = run_script(script, memory_mib);
            if let Ok(output) = ran.output {
                ran.output = within(output, max_result_bytes, "the script's return value").map_err(|message| Failure {
                    kind: FailureKind::Output,
                    message,
                    at: None,
                });
            }
            Answer::Script(ran)
        }
        Request::Check { texts, scripts, .. } => Answer::Checked {
            texts: texts.iter().map(|text| check_text(expressions, text.text())).collect(),
            scripts: scripts.iter().map(|source| quickjs::check_syntax(source)).collect(),
        },
    }
}

/// A text's syntax; one that compiles has its constant expressions evaluated too, as compiling
/// did under minijinja 2 (`folding.rs`), so a constant that is too much meets this worker's limit.
#[allow(clippy::disallowed_methods)] // the one place expressions are compiled
fn check_text(expressions: &Expressions, text: trellis_model::validate::Text<'_>) -> Result<(), String> {
    expressions.check_text(text)?;
    folding::evaluate_constants(text);
    Ok(())
}

/// Runs a script within the worker's memory: a script allowed more than the worker has gets
/// what the worker has (less room for the worker's own needs), and hearing that it ran out
/// says which limit it met.
fn run_script(mut script: Script, memory_mib: u64) -> Ran {
    let room = memory_mib.saturating_sub(WORKER_OWN_MIB).max(1);
    if u64::from(script.limits.memory_mb) <= room {
        return quickjs::run(&script);
    }
    script.limits.memory_mb = u32::try_from(room).unwrap_or(u32::MAX);
    let mut ran = quickjs::run(&script);
    if let Err(failure) = &mut ran.output {
        if failure.kind == FailureKind::Memory {
            failure.message = format!("script exceeded the sandbox memory limit of {memory_mib} MiB");
        }
    }
    ran
}

/// `value` if its JSON is at most `max` bytes: what is sent back is bounded by a little over
/// what the server would keep, so reading an answer never costs the server much more.
pub(super) fn within<T: serde::Serialize>(value: T, max: usize, what: &str) -> Result<T, String> {
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, &value);
    match counter.0 <= max {
        true => Ok(value),
        false => {
            Err(format!("{what} is {} bytes of JSON; the sandbox returns at most {max} (twice TRELLIS_MAX_NODE_OUTPUT_BYTES and 1 MiB)", counter.0))
        }
    }
}

/// Counts what is written to it.
struct Counter(usize);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Each job's value, stopping at the first error.
#[allow(clippy::disallowed_methods)] // the one place expressions are evaluated
fn evaluate(expressions: &Expressions, context: &Value, jobs: &[Job]) -> Result<Vec<Value>, String> {
    jobs.iter()
        .map(|job| match job {
            Job::Eval(text) => expressions.eval(text, context),
            Job::Render(value) => expressions.render_value(value, context),
        })
        .collect()
}
