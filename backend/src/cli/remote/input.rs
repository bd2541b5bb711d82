//! Values given on the command line: JSON inline or from a file (`@path`, `@-` for stdin),
//! and files read whole.

use super::failure::{CliError, CliResult};
use serde_json::Value;
use std::io::Read;
use std::path::Path;

/// `'{"a":1}'`, `@input.json` or `@-` (standard input) as JSON; `what` names the flag.
pub fn json_argument(text: &str, what: &str) -> CliResult<Value> {
    let (source, body) = match text.strip_prefix('@') {
        Some("-") => {
            let mut body = String::new();
            std::io::stdin()
                .read_to_string(&mut body)
                .map_err(|e| CliError::usage(format!("{what}: cannot read standard input: {e}")))?;
            ("standard input".to_owned(), body)
        }
        Some(path) => (format!("`{path}`"), read_file(Path::new(path), what)?),
        None => return parse(text, what, "the value"),
    };
    parse(&body, what, &source)
}

fn parse(body: &str, what: &str, source: &str) -> CliResult<Value> {
    serde_json::from_str(body).map_err(|e| {
        CliError::usage(format!(
            "{what}: {source} is not valid JSON ({e}); quote it for the shell, e.g. --input '{{\"name\": \"x\"}}', \
             or give a file as @path"
        ))
    })
}

/// A whole file as text; a missing or unreadable file is a usage error naming it.
pub fn read_file(path: &Path, what: &str) -> CliResult<String> {
    std::fs::read_to_string(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".to_owned(),
            _ => e.to_string(),
        };
        CliError::usage(format!("{what}: cannot read `{}`: {why}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_json_parses_and_bad_json_is_a_usage_error() {
        assert_eq!(json_argument(r#"{"a":1}"#, "--input").unwrap()["a"], 1);
        let bad = json_argument("{a:1}", "--input").unwrap_err();
        assert_eq!(bad.exit, super::super::failure::Exit::Usage);
        assert!(bad.message.starts_with("--input: the value is not valid JSON"), "{}", bad.message);
        let missing = json_argument("@/nonexistent/in.json", "--input").unwrap_err();
        assert!(missing.message.contains("no such file"), "{}", missing.message);
    }
}
