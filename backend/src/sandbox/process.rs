//! One worker process as the server sees it: started with nothing of the server's (an empty
//! environment, `/` as its directory, only its three pipes), spoken to one frame at a time,
//! and, when it dies or is killed, judged by how it ended.

use super::protocol::{self, Ready, MAX_ANSWER_BYTES};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

/// How much of a worker's standard error is kept to judge its end by (Rust's own messages
/// for a failed allocation, a stack overflow or a panic are one line each).
const STDERR_TAIL: usize = 4 * 1024;
/// How long a new worker may take to confine itself and say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(10);

pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    /// Buffered: a small answer's length and body come in one read.
    stdout: BufReader<ChildStdout>,
    stderr: JoinHandle<String>,
    /// Requests answered, for retiring a worker after many.
    pub served: u64,
}

/// Why a request got no answer: how its worker ended, or that none was free in time (`Busy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// An allocation failed at the address-space limit.
    Memory,
    /// The server killed it at the request's deadline.
    Time,
    /// The kernel stopped it at its CPU-time limit (`SIGXCPU`).
    Cpu,
    /// Its stack overflowed.
    Stack,
    /// It crashed otherwise: a signal, a panic, an exit it should not have made.
    Crash,
    /// Something other than the server killed it (`SIGKILL`: an operator, the OOM killer).
    Killed,
    /// It said something the server could not read, or too much.
    Protocol,
    /// The server retired it after many requests.
    Retired,
    /// No worker could be started for the request.
    Start,
    /// No worker was free within the caller's bound (`lanes::waiting_at_most`): nothing ran,
    /// no worker ended.
    Busy,
}

/// How the server came to end a worker.
#[derive(Debug)]
pub enum Ending {
    /// It closed its output: it exited or was killed.
    Exited,
    /// Its request ran out of time.
    PastDeadline,
    /// Its answer could not be read (why).
    Unreadable(String),
}

impl Cause {
    /// Every way a worker ends (not [`Cause::Busy`], which ends none).
    pub const ALL: [Cause; 9] = [
        Cause::Memory,
        Cause::Time,
        Cause::Cpu,
        Cause::Stack,
        Cause::Crash,
        Cause::Killed,
        Cause::Protocol,
        Cause::Retired,
        Cause::Start,
    ];

    /// Whether the user's code met a limit (the same code meets it again): not the
    /// sandbox's own trouble.
    pub fn is_limit(self) -> bool {
        matches!(self, Cause::Memory | Cause::Time | Cause::Cpu | Cause::Stack)
    }

    pub fn label(self) -> &'static str {
        match self {
            Cause::Memory => "memory",
            Cause::Time => "time",
            Cause::Cpu => "cpu",
            Cause::Stack => "stack",
            Cause::Crash => "crash",
            Cause::Killed => "killed",
            Cause::Protocol => "protocol",
            Cause::Retired => "retired",
            Cause::Start => "start",
            Cause::Busy => "busy",
        }
    }
}

/// How a worker ended: the cause and, for a crash, what it said or the signal.
#[derive(Debug, Clone)]
pub struct Death {
    pub cause: Cause,
    pub detail: String,
}

impl Worker {
    /// Starts `program` as a worker and waits until it says it has confined itself.
    pub async fn start(program: &Path, memory_mib: u64) -> Result<(Worker, Ready), String> {
        let mut child = Command::new(program)
            .args(["sandbox-worker", "--memory-mib", &memory_mib.to_string()])
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", program.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("the worker's pipes were not set up".into());
        };
        let stderr = tokio::spawn(tail(stderr));
        let mut worker = Worker { child, stdin, stdout: BufReader::new(stdout), stderr, served: 0 };
        let ready = match tokio::time::timeout(READY_WITHIN, read_frame(&mut worker.stdout)).await {
            Ok(Ok(body)) => protocol::decode::<Ready>(&body),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("it did not say it was ready within {} s", READY_WITHIN.as_secs())),
        };
        let ready = ready.and_then(|ready| match ready.version == protocol::VERSION {
            true => Ok(ready),
            false => {
                Err(format!("it speaks version {} of the protocol, the server {}", ready.version, protocol::VERSION))
            }
        });
        match ready {
            Ok(ready) => Ok((worker, ready)),
            Err(e) => {
                let death = worker.end(Ending::Unreadable(e.clone())).await;
                Err(format!("`{}` did not start as a sandbox worker ({e}; {})", program.display(), death.detail))
            }
        }
    }

    /// Sends one request frame and reads the answer's body.
    pub async fn exchange(&mut self, frame: &[u8]) -> std::io::Result<Vec<u8>> {
        self.stdin.write_all(frame).await?;
        self.stdin.flush().await?;
        let body = read_frame(&mut self.stdout).await?;
        self.served += 1;
        Ok(body)
    }

    /// Whether the process is still running (an idle worker can die too: killed by hand).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Ends the worker (killing it if it still runs) and judges how it ended.
    pub async fn end(mut self, ending: Ending) -> Death {
        if !matches!(ending, Ending::Exited) {
            let _ = self.child.start_kill();
        }
        // A worker that closed its output but does not exit is killed too; one that exited is
        // only reaped.
        let mut unresponsive = false;
        let status = match tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                unresponsive = true;
                let _ = self.child.start_kill();
                self.child.wait().await.ok()
            }
        };
        let stderr = tokio::time::timeout(Duration::from_millis(500), &mut self.stderr).await;
        let stderr = stderr.ok().and_then(Result::ok).unwrap_or_default();
        match ending {
            Ending::PastDeadline => Death { cause: Cause::Time, detail: "killed at its deadline".into() },
            Ending::Unreadable(why) => Death { cause: Cause::Protocol, detail: why },
            Ending::Exited if unresponsive => {
                Death { cause: Cause::Protocol, detail: "it closed its output without exiting".into() }
            }
            Ending::Exited => judge(status, &stderr),
        }
    }

    /// Ends an idle worker by closing its input (it exits when its input ends).
    pub async fn retire(self) {
        let Worker { mut child, stdin, .. } = self;
        drop(stdin);
        if tokio::time::timeout(Duration::from_secs(2), child.wait()).await.is_err() {
            let _ = child.start_kill();
        }
    }
}

/// Reads one frame's body, refusing one over [`MAX_ANSWER_BYTES`] unread.
async fn read_frame(reader: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Vec<u8>> {
    let len = reader.read_u32_le().await? as usize;
    if len > MAX_ANSWER_BYTES {
        let message = format!("its result is {} MiB, over the limit of {} MiB", len >> 20, MAX_ANSWER_BYTES >> 20);
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, message));
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).await?;
    Ok(body)
}

/// Drains a worker's standard error to its end, keeping the last [`STDERR_TAIL`] bytes.
async fn tail(mut stderr: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = [0; 1024];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > STDERR_TAIL {
            kept.drain(..kept.len() - STDERR_TAIL);
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Why a worker that ended on its own with `status`, having written `stderr`, ended.
fn judge(status: Option<ExitStatus>, stderr: &str) -> Death {
    let said = last_words(stderr);
    let signal = status.and_then(|s| s.signal());
    let cause = if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        Cause::Memory
    } else if stderr.contains("has overflowed its stack") {
        Cause::Stack
    } else if signal == Some(libc::SIGXCPU) {
        Cause::Cpu
    } else if signal == Some(libc::SIGKILL) {
        Cause::Killed
    } else {
        Cause::Crash
    };
    let detail = match (signal, status.and_then(|s| s.code())) {
        (Some(signal), _) => format!("ended by signal {signal} ({})", signal_name(signal)),
        (None, Some(code)) if said.is_empty() => format!("exited with code {code}"),
        (None, Some(code)) => format!("exited with code {code}: {said}"),
        (None, None) => "its end could not be read".to_owned(),
    };
    Death { cause, detail }
}

/// What a worker said last on standard error that says why: the panic's message (the line
/// after `panicked at`), else the last line that is not one of Rust's `note:` hints.
fn last_words(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if let Some(at) = lines.iter().rposition(|l| l.contains("panicked at")) {
        let message = lines.get(at + 1).filter(|l| !l.starts_with("note:")).copied().unwrap_or_default();
        return format!("panicked: {message}").trim_end_matches(": ").to_owned();
    }
    lines.iter().rev().find(|l| !l.starts_with("note:")).copied().unwrap_or_default().to_owned()
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGSYS => "SIGSYS",
        libc::SIGTERM => "SIGTERM",
        _ => "another signal",
    }
}
