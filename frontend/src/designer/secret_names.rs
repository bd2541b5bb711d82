//! Suggesting secret names while a template is typed: after `{{ secret.` (and any part of a
//! name), the names that fit, and the text once one is picked. Positions are byte offsets here;
//! the component converts the browser's UTF-16 caret with [`byte_offset`] and [`utf16_offset`].

/// The most names offered at once.
const MAX_SUGGESTIONS: usize = 8;

/// The name being typed just before `caret`, when it follows `{{ secret.`: where it starts
/// and what is typed so far.
pub fn partial_name(text: &str, caret: usize) -> Option<(usize, &str)> {
    let before = text.get(..caret)?;
    let typed_len = before.bytes().rev().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    let start = caret - typed_len;
    let lead = before[..start].strip_suffix("secret.")?;
    lead.trim_end().ends_with("{{").then_some((start, &before[start..]))
}

/// The names starting with `typed` (ignoring case, as people type), in the order given.
pub fn suggestions<'a>(names: &'a [String], typed: &str) -> Vec<&'a str> {
    let typed = typed.to_ascii_lowercase();
    names
        .iter()
        .filter(|n| n.to_ascii_lowercase().starts_with(&typed) && n.as_str() != typed)
        .take(MAX_SUGGESTIONS)
        .map(String::as_str)
        .collect()
}

/// `text` with the part of a name at `start..caret` replaced by `name` and the template closed
/// (unless `}}` already follows), and the caret after it.
pub fn complete(text: &str, start: usize, caret: usize, name: &str) -> (String, usize) {
    let after = &text[caret..];
    let rest_of_name = after.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    let after = &after[rest_of_name..];
    let close = if after.trim_start().starts_with("}}") { "" } else { " }}" };
    let inserted = format!("{name}{close}");
    (format!("{}{inserted}{after}", &text[..start]), start + inserted.len())
}

/// The byte offset of the UTF-16 position `utf16` (a browser caret) in `text`.
pub fn byte_offset(text: &str, utf16: usize) -> usize {
    let mut units = 0;
    for (at, c) in text.char_indices() {
        if units >= utf16 {
            return at;
        }
        units += c.len_utf16();
    }
    text.len()
}

/// The UTF-16 position of the byte offset `byte` in `text`.
pub fn utf16_offset(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].encode_utf16().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        ["GITHUB_TOKEN", "GITLAB_TOKEN", "SLACK_HOOK"].map(String::from).to_vec()
    }

    #[test]
    fn a_name_is_offered_only_inside_a_secret_reference() {
        assert_eq!(partial_name("Bearer {{ secret.GI", 19), Some((17, "GI")));
        assert_eq!(partial_name("{{secret.", 9), Some((9, "")));
        assert_eq!(partial_name("{{ input.GI", 11), None);
        assert_eq!(partial_name("secret.GI", 9), None);
        assert_eq!(partial_name("{{ secret.GI }}", 15), None, "the caret is past the reference");
    }

    #[test]
    fn suggestions_fit_what_is_typed_ignoring_case() {
        assert_eq!(suggestions(&names(), "gi"), ["GITHUB_TOKEN", "GITLAB_TOKEN"]);
        assert_eq!(suggestions(&names(), ""), ["GITHUB_TOKEN", "GITLAB_TOKEN", "SLACK_HOOK"]);
        assert!(suggestions(&names(), "X").is_empty());
    }

    #[test]
    fn picking_a_name_closes_the_template_once() {
        assert_eq!(
            complete("Bearer {{ secret.GI", 17, 19, "GITHUB_TOKEN"),
            ("Bearer {{ secret.GITHUB_TOKEN }}".into(), 32)
        );
        let (text, caret) = complete("{{ secret.G }} tail", 10, 11, "GITLAB_TOKEN");
        assert_eq!(text, "{{ secret.GITLAB_TOKEN }} tail");
        assert_eq!(caret, 22);
    }

    #[test]
    fn browser_carets_count_utf16_units() {
        let text = "é🙂 {{ secret.";
        assert_eq!(byte_offset(text, 3), "é🙂".len());
        assert_eq!(utf16_offset(text, "é🙂".len()), 3);
        assert_eq!(byte_offset(text, 100), text.len());
    }
}
