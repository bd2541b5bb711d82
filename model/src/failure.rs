//! Failure triage: an error message folded to its *class*, so failures that differ only in
//! numbers, ids or quoted values ("timeout after 3012 ms", "timeout after 2990 ms") group
//! together. The engine stores the class when an instance fails; the API groups by it.

/// Longest class kept: a class is a grouping key, not the message.
pub const MAX_CLASS_CHARS: usize = 300;

/// `message` with every number, hexadecimal id (UUIDs included) and quoted value (`"…"`, `'…'`)
/// replaced by a placeholder (`<n>`, `<id>`, `"…"`), whitespace runs made one space.
/// Backticked names (`` `node` ``) are kept: they name things, which is what a class is about.
pub fn error_class(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_CLASS_CHARS));
    let chars: Vec<char> = message.chars().collect();
    let mut i = 0;
    while i < chars.len() && out.chars().count() < MAX_CLASS_CHARS {
        let c = chars[i];
        if c == '"' || c == '\'' {
            if let Some(end) = chars[i + 1..].iter().position(|x| *x == c) {
                out.push(c);
                out.push('…');
                out.push(c);
                i += end + 2;
                continue;
            }
        }
        if c.is_alphanumeric() || c == '_' || c == '-' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '-' || chars[i] == '.')
            {
                i += 1;
            }
            // A trailing period ends the sentence, not the word.
            while i > start + 1 && chars[i - 1] == '.' {
                i -= 1;
            }
            let word: String = chars[start..i].iter().collect();
            match fold_word(&word) {
                _ if is_http_status(&out, &word) => out.push_str(&word),
                "" => out.push_str(&word),
                placeholder => out.push_str(placeholder),
            }
            continue;
        }
        if c.is_whitespace() {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
        i += 1;
    }
    out.trim_end().to_owned()
}

/// Whether `word` is an HTTP status after `HTTP ` (`HTTP 503`): what a failure is about, not a
/// varying number — 500, 502 and 503 are different troubles, and each keeps its group.
fn is_http_status(out: &str, word: &str) -> bool {
    out.ends_with("HTTP ") && word.len() == 3 && word.bytes().all(|b| b.is_ascii_digit())
}

/// The placeholder for a word that varies from failure to failure, or "" to keep the word.
fn fold_word(word: &str) -> &'static str {
    let digits = word.chars().filter(char::is_ascii_digit).count();
    if digits == 0 {
        return "";
    }
    let numeric = word.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '-' || c == '_');
    if numeric {
        return "<n>";
    }
    let hex = word.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    // "3012ms", "v2", "http2": a number with a unit or a name with a digit stays a word unless
    // it looks like an id (hexadecimal, and long enough not to be a word).
    if hex && word.len() >= 8 {
        return "<id>";
    }
    if word.chars().take_while(char::is_ascii_digit).count() > 0 && word.chars().any(char::is_alphabetic) {
        // "3012ms": the number varies, the unit does not.
        return "<n>";
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_ids_and_quoted_values_fold_names_stay() {
        let a = error_class("node `fetch` failed: timeout after 3012 ms");
        assert_eq!(a, "node `fetch` failed: timeout after <n> ms");
        assert_eq!(a, error_class("node `fetch` failed: timeout after 2990 ms"));
        assert_eq!(
            error_class("order 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b not found for \"ACME Corp\""),
            "order <id> not found for \"…\""
        );
        assert_eq!(error_class("HTTP 503 from upstream, retry in 1.5s."), "HTTP 503 from upstream, retry in <n>.");
        assert_eq!(
            error_class("HTTP 500 Internal Server Error: {\"id\": 12}"),
            "HTTP 500 Internal Server Error: {\"…\": <n>}"
        );
        assert_ne!(error_class("HTTP 502 Bad Gateway"), error_class("HTTP 503 Service Unavailable"));
        assert_eq!(error_class("HTTP 5"), "HTTP <n>");
        assert_eq!(
            error_class("node `call` failed: HTTP 404 Not Found: x"),
            "node `call` failed: HTTP 404 Not Found: x"
        );
        assert_eq!(error_class("http2   stream reset"), "http2 stream reset");
        assert_ne!(error_class("node `a` failed: x"), error_class("node `b` failed: x"));
    }

    #[test]
    fn a_class_is_bounded_and_never_empty_for_a_message() {
        let long = "word ".repeat(500);
        assert!(error_class(&long).chars().count() <= MAX_CLASS_CHARS);
        assert_eq!(error_class("it's broken"), "it's broken");
        assert_eq!(error_class("42"), "<n>");
    }
}
