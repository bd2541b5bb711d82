//! A script's `console` lines, bounded: at most [`MAX_LINES`] lines and [`MAX_BYTES`] bytes
//! are kept; what comes after is counted and named by one closing line. The bound is what
//! lets the lines travel with the attempt's span into the history and the run view.

/// Lines kept per run.
pub const MAX_LINES: usize = 100;
/// Bytes kept per run, over all lines.
pub const MAX_BYTES: usize = 16 * 1024;

#[derive(Debug, Default)]
pub struct Logs {
    lines: Vec<String>,
    bytes: usize,
    dropped: usize,
}

impl Logs {
    /// Takes one `console.<level>` line; `None` is a line the script logged after the logs
    /// were full (counted, never formatted). Answers whether more lines are taken.
    pub fn push(&mut self, level: &str, text: Option<String>) -> bool {
        let Some(text) = text.filter(|_| self.dropped == 0) else {
            self.dropped += 1;
            return false;
        };
        let mut line = match level {
            "warn" | "error" => format!("[{level}] {text}"),
            _ => text,
        };
        // What is stored never holds U+0000 (see `engine/json.rs`).
        if line.contains('\0') {
            line = line.replace('\0', "\u{FFFD}");
        }
        let room = MAX_BYTES - self.bytes;
        if self.lines.len() == MAX_LINES || room == 0 {
            self.dropped += 1;
            return false;
        }
        if line.len() > room {
            // The line that overflows is kept in part, so a single huge line still shows.
            let mut end = room.saturating_sub(TRUNCATED.len());
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            line.truncate(end);
            line.push_str(TRUNCATED);
            self.bytes = MAX_BYTES;
            self.lines.push(line);
            return false;
        }
        self.bytes += line.len();
        self.lines.push(line);
        true
    }

    /// The kept lines, and a last one naming how many were dropped, if any were.
    pub fn finish(mut self) -> Vec<String> {
        if self.dropped > 0 {
            let s = if self.dropped == 1 { "" } else { "s" };
            self.lines.push(format!(
                "… {} more line{s} dropped (a run keeps {MAX_LINES} lines, {} KiB)",
                self.dropped,
                MAX_BYTES / 1024
            ));
        }
        self.lines
    }
}

const TRUNCATED: &str = " … (cut)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_past_the_line_bound_are_counted_in_one_closing_line() {
        let mut logs = Logs::default();
        for i in 0..(MAX_LINES + 5) {
            logs.push("log", Some(format!("line {i}")));
        }
        logs.push("log", None);
        let lines = logs.finish();
        assert_eq!(lines.len(), MAX_LINES + 1);
        assert_eq!(lines[0], "line 0");
        assert!(lines[MAX_LINES].starts_with("… 6 more lines dropped"), "{}", lines[MAX_LINES]);
    }

    #[test]
    fn the_byte_bound_cuts_the_overflowing_line_and_keeps_its_start() {
        let mut logs = Logs::default();
        assert!(logs.push("warn", Some("careful".into())));
        assert!(!logs.push("log", Some("é".repeat(MAX_BYTES))));
        assert!(!logs.push("log", None));
        let lines = logs.finish();
        assert_eq!(lines[0], "[warn] careful");
        assert!(lines[1].ends_with(TRUNCATED) && lines[1].starts_with("éé"));
        assert!(lines[..2].iter().map(String::len).sum::<usize>() > MAX_BYTES - 4);
        assert!(lines[..2].iter().map(String::len).sum::<usize>() <= MAX_BYTES);
        assert_eq!(lines[2], "… 1 more line dropped (a run keeps 100 lines, 16 KiB)");
    }

    #[test]
    fn nul_never_reaches_a_kept_line() {
        let mut logs = Logs::default();
        logs.push("error", Some("a\0b".into()));
        assert_eq!(logs.finish(), ["[error] a\u{FFFD}b"]);
    }
}
