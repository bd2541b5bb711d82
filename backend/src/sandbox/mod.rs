//! Where user code runs: in sandbox worker processes, never in the server.
//!
//! Every expression and template (node configs, branch conditions, transforms, concurrency
//! keys, webhook input mappings, sub-workflow inputs), their compilation for validation,
//! and every `script` node run in a pool of `trellis sandbox-worker` processes (`worker/`),
//! each confined by the operating system (`worker/confine.rs`) and killed at its deadline.
//! In-process meters cannot bound what minijinja's own operators and constant expressions
//! allocate (its fuel is only a backstop, sized to outlast these limits so users meet them and
//! their messages), and an allocation that fails in Rust aborts the whole process; in a worker it
//! aborts only the worker, and its request fails with the limit it met while every other
//! instance, stream and request carries on. The server only sends a request (`protocol.rs`)
//! and reads a bounded answer, so nothing a user writes can make it allocate more than the
//! request it built and [`protocol::MAX_ANSWER_BYTES`].
//!
//! A request carries only the parts of the context its texts can reach (`trellis_model::
//! expr::scope`): an expression reading one field of a 1 MB upstream output sends that
//! field, not the megabyte.
//!
//! Scripts and expressions use the workers in lanes (`lanes.rs`): endless scripts never make
//! an expression wait, and a request with a deadline of its own waits in line a bounded time.

mod lanes;
mod metrics;
mod pool;
mod process;
pub mod protocol;
pub mod script;
mod settings;
pub mod worker;

pub use lanes::{waiting_at_most, Lane};
pub use metrics::SANDBOX as METRICS;
pub use protocol::Job;

use crate::secrets::Opened;
use anyhow::{bail, Context};
use pool::Pool;
pub use process::Cause;
use protocol::{Answer, Request, Source};
use script::{Failure, Ran, Script};
use secrecy::ExposeSecret;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use trellis_model::expr::scope;

#[derive(Debug, Clone)]
pub struct SandboxSettings {
    /// The `trellis` binary the workers run (`trellis sandbox-worker`).
    pub program: PathBuf,
    /// Workers scripts may occupy at once; the pool keeps a reserve for expressions beside them.
    pub workers: usize,
    /// Memory a worker may allocate for user code.
    pub memory_mib: u64,
    /// The deadline of one evaluation of a node's expressions, and of a check.
    pub timeout_ms: u64,
    /// The most JSON a result may be, checked in the worker (well over a node's output cap).
    pub max_result_bytes: usize,
}

/// The sandbox failed a request: a limit, a crash, a kill. Another attempt may succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    pub cause: Cause,
    /// What the user is told, e.g. `expression exceeded the sandbox memory limit of 256 MiB`.
    pub message: String,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What compiling without running found: each text's and each script's first error.
pub struct Checked {
    pub texts: Vec<Result<(), String>>,
    pub scripts: Vec<Result<(), Failure>>,
}

pub struct Sandbox {
    pool: Arc<Pool>,
}

impl Sandbox {
    /// A sandbox whose workers start when first needed.
    pub fn new(settings: SandboxSettings) -> Arc<Sandbox> {
        Arc::new(Sandbox { pool: Pool::new(settings) })
    }

    /// A sandbox with every worker started and confined: refuses when the worker program
    /// is missing, not executable, or does not start as a worker.
    pub async fn start(settings: SandboxSettings) -> anyhow::Result<Arc<Sandbox>> {
        check_program(&settings.program)?;
        let sandbox = Sandbox::new(settings);
        let (filtered, inherited) =
            sandbox.pool.fill().await.map_err(anyhow::Error::msg).context("the sandbox workers")?;
        let s = sandbox.settings();
        tracing::info!(
            workers = sandbox.pool.size(),
            script_workers = s.workers,
            memory_mib = s.memory_mib,
            timeout_ms = s.timeout_ms,
            syscall_filter = filtered,
            inherited_descriptors = inherited,
            "sandbox workers ready"
        );
        Ok(sandbox)
    }

    pub fn settings(&self) -> &SandboxSettings {
        &self.pool.settings
    }

    /// Evaluates a node's `jobs` over `context` (narrowed to what they reach), within
    /// `timeout` if given, else the sandbox's deadline. `Ok(Err)` is the user's error (a
    /// typo, a type error); `Err` is the sandbox's (a limit, a crash).
    pub async fn evaluate(
        &self,
        jobs: Vec<Job>,
        context: &Value,
        timeout: Option<Duration>,
    ) -> Result<Result<Vec<Value>, String>, Stopped> {
        self.evaluate_with_secrets(jobs, context, &Opened::default(), timeout).await
    }

    /// [`Sandbox::evaluate`] for a node attempt, with `secrets` in scope as `secret` — only
    /// here, never in the context of other evaluations (concurrency keys, webhook mappings,
    /// previews), and only the ones the node references. The request's copies of the values
    /// are wiped once it is encoded, and its frame once it is sent.
    pub async fn evaluate_with_secrets(
        &self,
        jobs: Vec<Job>,
        context: &Value,
        secrets: &Opened,
        timeout: Option<Duration>,
    ) -> Result<Result<Vec<Value>, String>, Stopped> {
        // Text without template syntax renders as itself (`Expressions::render`): a node
        // whose config holds none needs no worker (no user code runs). Its answer is the
        // worker's, held to the same size.
        let jobs = match literal_values(jobs) {
            Ok(values) => return Ok(worker::within(values, self.settings().max_result_bytes, "the result")),
            Err(jobs) => jobs,
        };
        let texts: Vec<&str> = jobs.iter().flat_map(Job::texts).collect();
        let mut context = scope::narrow(&texts, context);
        if let (Value::Object(roots), false) = (&mut context, secrets.is_empty()) {
            let values = secrets
                .values
                .iter()
                .map(|(name, value)| (name.clone(), Value::String(value.expose_secret().to_owned())));
            roots.insert(trellis_model::secret::ROOT.to_owned(), Value::Object(values.collect()));
        }
        let deadline = self.deadline(timeout);
        let max_result_bytes = self.settings().max_result_bytes;
        let request = Request::Evaluate { context, jobs, deadline_ms: millis(deadline), max_result_bytes };
        match self.call(request).await? {
            Answer::Evaluated(result) => Ok(result),
            _ => Err(unexpected()),
        }
    }

    /// Whether a worker `lane` may use is free at this moment (a caller now would not wait
    /// in line).
    pub fn has_free_worker(&self, lane: Lane) -> bool {
        self.pool.free_slots(lane) > 0
    }

    /// Runs one script within `deadline` (its own time limit is enforced inside the worker;
    /// the deadline is the backstop).
    pub async fn run_script(&self, script: Script, deadline: Duration) -> Result<Ran, Stopped> {
        let max_result_bytes = self.settings().max_result_bytes;
        match self.call(Request::Script { script, deadline_ms: millis(deadline), max_result_bytes }).await? {
            Answer::Script(ran) => Ok(ran),
            _ => Err(unexpected()),
        }
    }

    /// Compiles expressions, templates and scripts without running them.
    pub async fn check(&self, texts: Vec<Source>, scripts: Vec<String>) -> Result<Checked, Stopped> {
        let deadline_ms = self.settings().timeout_ms;
        match self.call(Request::Check { texts, scripts, deadline_ms }).await? {
            Answer::Checked { texts, scripts } => Ok(Checked { texts, scripts }),
            _ => Err(unexpected()),
        }
    }

    /// Each distinct text's syntax. When compiling them together meets a limit (one of them
    /// is a bomb), each is compiled alone, so the failure lands on the one it is. `Err`: the
    /// sandbox could not check them for a reason of its own (try again).
    pub async fn syntax_of(&self, texts: Vec<Source>) -> Result<HashMap<Source, Result<(), String>>, Stopped> {
        let mut texts = texts;
        texts.sort();
        texts.dedup();
        if texts.is_empty() {
            return Ok(HashMap::new());
        }
        match self.check(texts.clone(), Vec::new()).await {
            Ok(checked) => return Ok(texts.into_iter().zip(checked.texts).collect()),
            Err(stopped) if !stopped.cause.is_limit() => return Err(stopped),
            Err(_) => {}
        }
        let mut results = HashMap::new();
        for text in texts {
            let result = match self.check(vec![text.clone()], Vec::new()).await {
                Ok(mut checked) => checked.texts.pop().unwrap_or(Ok(())),
                Err(stopped) if stopped.cause.is_limit() => Err(stopped.message),
                Err(stopped) => return Err(stopped),
            };
            results.insert(text, result);
        }
        Ok(results)
    }

    fn deadline(&self, timeout: Option<Duration>) -> Duration {
        let limit = Duration::from_millis(self.settings().timeout_ms);
        timeout.map_or(limit, |t| t.min(limit))
    }

    /// Sends `request` to a worker once one is free. The caller waits in line itself (one
    /// that gives up leaves it); the exchange then runs as a task of its own, so a caller that
    /// stops waiting (a timed-out attempt) never leaves a worker half-way through a frame.
    async fn call(&self, request: Request) -> Result<Answer, Stopped> {
        let subject = request.subject();
        let lane = Lane::of(&request);
        let deadline = Duration::from_millis(request.deadline_ms());
        let unsent = |message: String| Stopped { cause: Cause::Protocol, message };
        let frame = protocol::encode(&request).map(zeroize::Zeroizing::new);
        wipe_secrets(request);
        let frame = frame.map_err(|e| unsent(format!("the {subject} could not be sent: {e}")))?;
        if frame.len() > protocol::MAX_REQUEST_BYTES {
            let (size, limit) = (frame.len() >> 20, protocol::MAX_REQUEST_BYTES >> 20);
            return Err(unsent(format!("what this {subject} sees is {size} MiB; a sandbox request takes {limit} MiB")));
        }
        let slot = match self.pool.slot(lane).await {
            Ok(slot) => slot,
            Err(death) => return Err(Stopped { cause: death.cause, message: death.detail }),
        };
        let pool = self.pool.clone();
        let called = tokio::spawn(async move { pool.call(slot, frame, deadline).await });
        match called.await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(death)) => Err(Stopped { cause: death.cause, message: self.describe(subject, death, deadline) }),
            Err(e) => Err(Stopped { cause: Cause::Crash, message: format!("the sandbox stopped unexpectedly: {e}") }),
        }
    }

    /// What the user is told when a worker ended under their code.
    fn describe(&self, subject: &str, death: process::Death, deadline: Duration) -> String {
        let detail = death.detail;
        match death.cause {
            Cause::Memory => {
                format!("{subject} exceeded the sandbox memory limit of {} MiB", self.settings().memory_mib)
            }
            Cause::Time => format!("{subject} exceeded the sandbox time limit of {} ms", deadline.as_millis()),
            Cause::Cpu => {
                format!("{subject} exceeded the sandbox CPU-time limit (its deadline of {} ms)", deadline.as_millis())
            }
            Cause::Stack => format!("{subject} exceeded the sandbox stack limit (it is nested too deeply)"),
            Cause::Killed => format!("the sandbox worker running this {subject} was killed ({detail})"),
            Cause::Protocol => format!("the sandbox worker's answer for this {subject} could not be read ({detail})"),
            Cause::Start => format!("no sandbox worker could be started for this {subject} ({detail})"),
            Cause::Crash | Cause::Retired => format!("the sandbox worker crashed running this {subject} ({detail})"),
            Cause::Busy => detail,
        }
    }
}

/// The jobs' values when every one renders text without template syntax (so as it is);
/// the jobs back when any needs a worker. No jobs: no values.
fn literal_values(jobs: Vec<Job>) -> Result<Vec<Value>, Vec<Job>> {
    let literal = |job: &Job| {
        matches!(job, Job::Render(_)) && job.texts().iter().all(|text| !trellis_model::expr::is_template(text))
    };
    if !jobs.iter().all(literal) {
        return Err(jobs);
    }
    Ok(jobs.into_iter().filter_map(|job| if let Job::Render(value) = job { Some(value) } else { None }).collect())
}

/// Overwrites the secret values a request carried before it is freed.
fn wipe_secrets(request: Request) {
    use zeroize::Zeroize;
    if let Request::Evaluate { context: Value::Object(mut roots), .. } = request {
        if let Some(Value::Object(values)) = roots.get_mut(trellis_model::secret::ROOT) {
            values
                .values_mut()
                .filter_map(|v| if let Value::String(s) = v { Some(s) } else { None })
                .for_each(String::zeroize);
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn unexpected() -> Stopped {
    Stopped { cause: Cause::Protocol, message: "the sandbox worker answered a different question".into() }
}

/// Refuses a worker program that is missing or cannot be executed, saying which.
fn check_program(program: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let shown = program.display();
    let hint = "set TRELLIS_SANDBOX_WORKER to the path of the trellis binary";
    let meta = match std::fs::metadata(program) {
        Ok(meta) => meta,
        Err(e) => bail!("the sandbox worker program `{shown}` cannot be found ({e}); {hint}"),
    };
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        bail!("the sandbox worker program `{shown}` is not an executable file; {hint}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A sandbox whose worker program does not exist: any request that reaches a worker fails.
    fn without_workers() -> Arc<Sandbox> {
        Sandbox::new(SandboxSettings {
            program: PathBuf::from("/nonexistent/trellis"),
            workers: 1,
            memory_mib: 64,
            timeout_ms: 1_000,
            max_result_bytes: 1 << 20,
        })
    }

    #[tokio::test]
    async fn text_without_template_syntax_renders_as_itself_without_a_worker() {
        let sandbox = without_workers();
        let config = json!({"url": "http://127.0.0.1/a?b=c", "headers": {"x": "{ not a template }"}, "n": 3});
        let jobs = vec![Job::Render(config.clone()), Job::Render(json!("plain"))];
        let values = sandbox.evaluate(jobs, &json!({}), None).await.expect("no worker needed");
        assert_eq!(values, Ok(vec![config, json!("plain")]));

        let small = Sandbox::new(SandboxSettings { max_result_bytes: 10, ..without_workers().settings().clone() });
        let too_large = small.evaluate(vec![Job::Render(json!("more than ten bytes"))], &json!({}), None).await;
        assert!(too_large.is_ok_and(|r| r.is_err_and(|e| e.contains("at most 10"))), "held to the worker's size");

        for needs_a_worker in [Job::Render(json!({"url": "http://x/{{ input.id }}"})), Job::Eval("1 + 1".into())] {
            let stopped = sandbox.evaluate(vec![needs_a_worker], &json!({}), None).await;
            assert!(stopped.is_err_and(|s| s.cause == Cause::Start), "a template or an expression goes to a worker");
        }
    }
}
