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
    /// The HTTP status of a refusal, for the commands that say more about some of them.
    pub status: Option<u16>,
}

impl CliError {
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError { exit: Exit::Usage, message: message.into(), status: None }
    }

    pub fn refused(message: impl Into<String>) -> CliError {
        CliError { exit: Exit::Refused, message: message.into(), status: None }
    }

    pub fn unreachable(message: impl Into<String>) -> CliError {
        CliError { exit: Exit::Unreachable, message: message.into(), status: None }
    }

    /// A refusal with the status the server answered.
    pub fn refused_with(status: u16, message: impl Into<String>) -> CliError {
        CliError { status: Some(status), ..CliError::refused(message) }
    }

    pub fn unsuccessful(message: impl Into<String>) -> CliError {
        CliError { exit: Exit::Unsuccessful, message: message.into(), status: None }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

pub type CliResult<T> = Result<T, CliError>;

/// clap's account of a wrong command line, said as every other client error is: one line,
/// `trellis: error: `, what is wrong (with clap's possible values and tips), then where to
/// read more. clap's own form (a paragraph, a usage line and a blank line) would be the
/// only error that scripts and people see in two shapes. `typed`: the command as typed
/// (`trellis instance list`), named when clap's account has no usage line.
pub fn usage_line(rendered: &str, typed: &str) -> String {
    let (mut said, mut command) = (Vec::new(), typed.to_owned());
    for line in rendered.lines().map(str::trim) {
        if let Some(usage) = line.strip_prefix("Usage: ") {
            let words = usage.split_whitespace().take_while(|w| w.starts_with(|c: char| c.is_ascii_lowercase()));
            let words: Vec<&str> = words.collect();
            if !words.is_empty() {
                command = words.join(" ");
            }
            break;
        }
        if line.starts_with("For more information") {
            continue;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        let line = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')).unwrap_or(line);
        if !line.is_empty() {
            said.push(line.to_owned());
        }
    }
    format!("trellis: error: {}; see `{command} --help`", said.join("; "))
}

#[cfg(test)]
mod tests {
    use super::usage_line;

    #[test]
    fn a_usage_error_is_one_line_naming_the_help_to_read() {
        let rendered =
            "error: invalid value 'bogus' for '--status <STATUS>'\n  [possible values: queued, failed]\n\n  \
                        tip: a similar value exists: 'failed'\n\nUsage: trellis instance list [OPTIONS]\n\n\
                        For more information, try '--help'.\n";
        assert_eq!(
            usage_line(rendered, "trellis"),
            "trellis: error: invalid value 'bogus' for '--status <STATUS>'; possible values: queued, failed; \
             tip: a similar value exists: 'failed'; see `trellis instance list --help`"
        );
        assert_eq!(
            usage_line("error: unexpected argument\n", "trellis"),
            "trellis: error: unexpected argument; see `trellis --help`"
        );
        assert_eq!(
            usage_line(
                "error: invalid value 'x' for '--status'\n\nFor more information, try '--help'.\n",
                "trellis instance list"
            ),
            "trellis: error: invalid value 'x' for '--status'; see `trellis instance list --help`"
        );
    }
}
