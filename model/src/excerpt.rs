//! Short excerpts of what a user sent, for messages that quote it: an error or a log entry
//! that echoed a whole input could be megabytes, repeated per violation.

use serde_json::Value;
use std::borrow::Cow;

/// What marks a cut excerpt.
pub const CUT_MARK: &str = "…(cut)";

/// `text` if at most `max` bytes, else its first `max` bytes or less (cut on a character
/// boundary) followed by [`CUT_MARK`].
pub fn excerpt(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    Cow::Owned(format!("{}{CUT_MARK}", head(text, max)))
}

/// The first `max` bytes of `text` or less: cut on a character boundary, never inside one.
pub fn head(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `value` as JSON text, cut like [`excerpt`]: serializes no more of it than the excerpt
/// shows, however large the value.
pub fn value_excerpt(value: &Value, max: usize) -> String {
    /// Keeps the first `max` + 4 bytes (so a cut falls on a character boundary within
    /// them), then stops serialization.
    struct Head {
        bytes: Vec<u8>,
        max: usize,
    }
    impl std::io::Write for Head {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = (self.max + 4).saturating_sub(self.bytes.len());
            self.bytes.extend_from_slice(&buf[..buf.len().min(room)]);
            match room < buf.len() {
                true => Err(std::io::Error::other("enough")),
                false => Ok(buf.len()),
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut head = Head { bytes: Vec::new(), max };
    let _ = serde_json::to_writer(&mut head, value);
    let mut end = head.bytes.len();
    // At most 3 bytes of a character split by the cap: drop them.
    while std::str::from_utf8(&head.bytes[..end]).is_err() {
        end -= 1;
    }
    let text = std::str::from_utf8(&head.bytes[..end]).unwrap_or_default();
    excerpt(text, max).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_text_is_cut_on_a_character_boundary_and_marked() {
        assert_eq!(excerpt("short", 10), "short");
        assert_eq!(excerpt("abcdef", 3), format!("abc{CUT_MARK}"));
        assert_eq!(excerpt("ééé", 3), format!("é{CUT_MARK}"));
    }

    #[test]
    fn a_value_is_quoted_only_as_far_as_shown() {
        assert_eq!(value_excerpt(&json!({"a": 1}), 100), r#"{"a":1}"#);
        let big = json!({"text": "ü".repeat(1_000_000)});
        let shown = value_excerpt(&big, 100);
        assert!(shown.starts_with(r#"{"text":"üü"#) && shown.ends_with(CUT_MARK), "{shown}");
        assert!(shown.len() <= 100 + CUT_MARK.len(), "{}", shown.len());
    }
}
