//! How a client command ends: the exit codes scripts can tell apart, and the one line
//! printed when something went wrong.

use std::fmt;
use std::process::ExitCode;

/// The exit codes of the client commands (README: "From the terminal").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done, and what was asked for succeeded.
    Success = 0,
    /// Done, but the outcome was not a success: an instance that ended failed, canceled or
    /// timed out (`--wait`, `watch`), a bulk job with failures, an invalid definition, a
    /// declined confirmation.
    Unsuccessful = 1,
    /// The command line or a local file is wrong (clap's own usage errors exit 2 too).
    Usage = 2,
    /// The server answered with a refusal (4xx or 5xx); its problem `detail` is printed.
    Refused = 3,
    /// The server could not be reached (connection refused, DNS, TLS, timeout).
    Unreachable = 4,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}

/// A failed client command: what went wrong and what to do, in one line.
#[derive(Debug)]
pub struct CliError {
    pub exit: Exit,
    pub message: String,
}

impl CliError {
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError { exit: Exit::Usage, message: message.into() }
    }

    pub fn refused(message: impl Into<String>) -> CliError {
        CliError { exit: Exit::Refused, message: message.into() }
    }

    pub fn unreachable(message: impl Into<String>) -> CliError {
        CliError { exit: Exit::Unreachable, message: message.into() }
    }

    pub fn unsuccessful(message: impl Into<String>) -> CliError {
        CliError { exit: Exit::Unsuccessful, message: message.into() }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

pub type CliResult<T> = Result<T, CliError>;
