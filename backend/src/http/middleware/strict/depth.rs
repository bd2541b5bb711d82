//! Nesting in a body: a value nested too deep could be stored but never read back
//! (`trellis_model::nesting`), so a body nested deeper than a stored value may be, plus its own
//! fields around one, is refused at the edge, naming where. The bytes are scanned (no parse:
//! the parser itself gives up at 128 levels, with no path).

use super::BodyError;
use trellis_model::excerpt::excerpt;
use trellis_model::nesting::MAX_JSON_DEPTH;

/// Levels a request's own fields may add around a value (`{"input": …}`, a definition's
/// `settings.input_schema`): the engine holds each value to the limit itself, naming it.
const ENVELOPE: usize = 4;
/// The deepest body taken.
pub const MAX_BODY_DEPTH: usize = MAX_JSON_DEPTH + ENVELOPE;
/// The most of a path a refusal quotes (keys are the sender's text).
const MAX_PATH_SHOWN: usize = 200;

/// Where a container is: the key being read in an object, the index in an array.
enum Frame {
    Object(String),
    Array(usize),
}

/// Refuses `body` if it nests containers deeper than [`MAX_BODY_DEPTH`]. Malformed JSON is
/// left to the caller's parse.
pub fn refuse_deep(body: &[u8]) -> Result<(), BodyError> {
    deeper_than(body, MAX_BODY_DEPTH).map_or(Ok(()), |path| {
        let path = excerpt(&path, MAX_PATH_SHOWN).into_owned();
        Err(BodyError::Shape {
            detail: format!(
                "the body nests deeper than {MAX_BODY_DEPTH} levels at `{path}`; Trellis stores JSON nested at most \
                 {MAX_JSON_DEPTH} levels deep (arrays and objects within each other)"
            ),
            path: Some(path),
            code: "too_deep",
        })
    })
}

/// The path (`input.a[2].b`, `$` for the root) of the first container nested deeper than
/// `limit`, if one is.
fn deeper_than(body: &[u8], limit: usize) -> Option<String> {
    let mut frames: Vec<Frame> = Vec::new();
    // In an object, whether the next string is a key.
    let mut key_next = false;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                let end = string_end(body, i + 1);
                if key_next {
                    if let Some(Frame::Object(key)) = frames.last_mut() {
                        *key = String::from_utf8_lossy(&body[i + 1..end.min(body.len())]).into_owned();
                    }
                    key_next = false;
                }
                i = end;
            }
            open @ (b'{' | b'[') => {
                if frames.len() == limit {
                    return Some(path_of(&frames));
                }
                key_next = open == b'{';
                frames.push(if key_next { Frame::Object(String::new()) } else { Frame::Array(0) });
            }
            b'}' | b']' => {
                frames.pop();
                key_next = false;
            }
            b',' => match frames.last_mut() {
                Some(Frame::Array(index)) => *index += 1,
                Some(Frame::Object(_)) => key_next = true,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the quote closing the string whose text starts at `from` (or the end).
fn string_end(body: &[u8], mut from: usize) -> usize {
    while from < body.len() {
        match body[from] {
            b'\\' => from += 2,
            b'"' => return from,
            _ => from += 1,
        }
    }
    body.len()
}

fn path_of(frames: &[Frame]) -> String {
    let mut path = String::new();
    for frame in frames {
        match frame {
            Frame::Object(key) if path.is_empty() => path.push_str(key),
            Frame::Object(key) => {
                path.push('.');
                path.push_str(key);
            }
            Frame::Array(index) => path.push_str(&format!("[{index}]")),
        }
    }
    if path.is_empty() {
        path.push('$');
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_container_past_the_limit_is_named() {
        assert_eq!(deeper_than(br#"{"a": [1, {"b": 2}]}"#, 3), None);
        assert_eq!(deeper_than(br#"{"a": [1, {"b": 2}]}"#, 2).as_deref(), Some("a[1]"));
        assert_eq!(deeper_than(br#"{"x": "[[[{", "y\"}": {"z": [[]]}}"#, 3).as_deref(), Some(r#"y\"}.z[0]"#));
        assert_eq!(deeper_than(b"[[]]", 0).as_deref(), Some("$"));
    }

    #[test]
    fn a_deep_body_is_refused_with_a_short_path() {
        let body = format!("{}1{}", r#"{"input":"#.repeat(200), "}".repeat(200));
        let Err(BodyError::Shape { path: Some(path), code: "too_deep", .. }) = refuse_deep(body.as_bytes()) else {
            panic!("taken")
        };
        assert!(path.starts_with("input.input.input"), "{path}");
        assert!(path.len() <= MAX_PATH_SHOWN + trellis_model::excerpt::CUT_MARK.len());
        let fine = format!("{}1{}", r#"{"input":"#.repeat(MAX_BODY_DEPTH), "}".repeat(MAX_BODY_DEPTH));
        assert!(refuse_deep(fine.as_bytes()).is_ok());
    }
}
