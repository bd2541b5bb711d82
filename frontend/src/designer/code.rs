//! The script editor's logic: what Tab and Shift+Tab do to the text and its selection, the
//! line-number gutter, and the preview request built from the sample input.

use super::preview;
use serde_json::{json, Value};
use trellis_model::api::ScriptPreviewRequest;

/// One level of indentation.
pub const INDENT: &str = "  ";

/// The text and selection (UTF-16 offsets, as the browser counts them) after a key press.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    pub text: String,
    pub start: u32,
    pub end: u32,
}

/// Tab: with no selection, inserts [`INDENT`] at the caret; with a selection, indents every
/// line it touches. Shift+Tab (`outdent`) takes up to one level off each line it touches.
pub fn tab(text: &str, start: u32, end: u32, outdent: bool) -> Edited {
    let units: Vec<u16> = text.encode_utf16().collect();
    let (start, end) = (start.min(end) as usize, end.max(start) as usize);
    let (start, end) = (start.min(units.len()), end.min(units.len()));
    let indent: Vec<u16> = INDENT.encode_utf16().collect();
    if start == end && !outdent {
        let mut out = units[..start].to_vec();
        out.extend(&indent);
        out.extend(&units[start..]);
        let caret = (start + indent.len()) as u32;
        return Edited { text: String::from_utf16_lossy(&out), start: caret, end: caret };
    }
    let newline = u16::from(b'\n');
    let first = units[..start].iter().rposition(|&u| u == newline).map_or(0, |i| i + 1);
    let mut out = units[..first].to_vec();
    let (mut new_start, mut new_end) = (start as i64, end as i64);
    let mut line_start = first;
    // A selection ending right at a line's start leaves that line alone.
    let last = if end > start && end > 0 && units[end - 1] == newline { end - 1 } else { end };
    loop {
        let line_end = units[line_start..].iter().position(|&u| u == newline).map_or(units.len(), |i| line_start + i);
        let line = &units[line_start..line_end];
        let change: i64 = if outdent {
            let spaces = line.iter().take(indent.len()).take_while(|&&u| u == u16::from(b' ')).count();
            out.extend(&line[spaces..]);
            -(spaces as i64)
        } else {
            out.extend(&indent);
            out.extend(line);
            indent.len() as i64
        };
        if line_start <= start {
            new_start = (new_start + change).max(line_start as i64);
        }
        new_end = (new_end + change).max(line_start as i64);
        if line_end >= last || line_end == units.len() {
            out.extend(&units[line_end..]);
            break;
        }
        out.push(newline);
        line_start = line_end + 1;
    }
    Edited { text: String::from_utf16_lossy(&out), start: new_start as u32, end: new_end as u32 }
}

/// The gutter's text: `1` to the number of lines, one per line.
pub fn line_numbers(text: &str) -> String {
    let lines = text.split('\n').count();
    (1..=lines).map(|n| n.to_string()).collect::<Vec<_>>().join("\n")
}

/// The preview request for `source` with the designer's sample (the same sample expression
/// previews use: plain JSON is the input; `{"input", "nodes"}` gives both) and the node's limits.
pub fn preview_request(source: &str, sample_json: &str, config: &Value) -> Result<ScriptPreviewRequest, String> {
    if source.trim().is_empty() {
        return Err("Write a script to preview it.".to_owned());
    }
    let sample: Value = if sample_json.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(sample_json).map_err(|e| format!("The sample input is not valid JSON: {e}"))?
    };
    let context = preview::context(&sample);
    Ok(ScriptPreviewRequest {
        source: source.to_owned(),
        input: Some(context["input"].clone()),
        nodes: Some(context["nodes"].clone()),
        memory_mb: config.get("memory_mb").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()),
        timeout_ms: config.get("timeout_ms").and_then(Value::as_u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_at_a_caret_inserts_one_indent() {
        assert_eq!(tab("return 1;", 0, 0, false), Edited { text: "  return 1;".into(), start: 2, end: 2 });
        assert_eq!(tab("ab", 1, 1, false), Edited { text: "a  b".into(), start: 3, end: 3 });
    }

    #[test]
    fn tab_over_a_selection_indents_each_line_it_touches() {
        let text = "if (x) {\nreturn 1;\n}";
        let edited = tab(text, 9, 18, false);
        assert_eq!(edited.text, "if (x) {\n  return 1;\n}");
        assert_eq!((edited.start, edited.end), (11, 20));
        let all = tab(text, 0, text.len() as u32, false);
        assert_eq!(all.text, "  if (x) {\n  return 1;\n  }");
    }

    #[test]
    fn shift_tab_takes_off_one_level_and_never_more_than_there_is() {
        let edited = tab("    a\n b\nc", 0, 10, true);
        assert_eq!(edited.text, "  a\nb\nc");
        assert_eq!(tab("  a", 3, 3, true), Edited { text: "a".into(), start: 1, end: 1 });
    }

    #[test]
    fn offsets_count_utf16_units_like_the_browser() {
        let edited = tab("é😀x", 3, 3, false);
        assert_eq!(edited, Edited { text: "é😀  x".into(), start: 5, end: 5 });
    }

    #[test]
    fn the_gutter_numbers_every_line() {
        assert_eq!(line_numbers("a\nb\n"), "1\n2\n3");
        assert_eq!(line_numbers(""), "1");
    }

    #[test]
    fn the_preview_request_reads_the_sample_like_expression_previews_do() {
        let config = json!({"memory_mb": 16, "timeout_ms": 500});
        let request = preview_request("return input.n;", r#"{"n": 2}"#, &config).unwrap();
        assert_eq!((request.input, request.nodes), (Some(json!({"n": 2})), Some(json!({}))));
        assert_eq!((request.memory_mb, request.timeout_ms), (Some(16), Some(500)));
        let with_nodes = r#"{"input": 1, "nodes": {"a": {"output": 5}}}"#;
        let request = preview_request("return 1;", with_nodes, &json!({})).unwrap();
        assert_eq!(request.nodes, Some(json!({"a": {"output": 5}})));
        assert!(preview_request("  ", "{}", &json!({})).is_err());
        assert!(preview_request("return 1;", "{", &json!({})).unwrap_err().contains("not valid JSON"));
    }
}
