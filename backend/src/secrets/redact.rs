//! Redaction: every form of a secret's value an attempt used is replaced by `[secret:NAME]` in
//! what the attempt leaves behind. One Aho-Corasick automaton (leftmost-longest) per attempt holds
//! every form of every value, so a text is scanned once whatever the number of secrets.
//!
//! The forms, after GitHub Actions' log masking and where it falls short: the value itself; its
//! JSON-escaped text; its URL encodings (percent-encoding with upper- and lower-case digits, and
//! form encoding); and its base64 (standard and URL-safe, padded or not) — also as it appears
//! inside the base64 of a longer text (`Basic base64(user:TOKEN)`): each of the three alignments
//! a value can start at, without the characters its neighbours also decide. Derived forms shorter
//! than [`MIN_DERIVED`] characters are left out (they would match ordinary text); the value itself
//! is always redacted.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;
use std::borrow::Cow;
use zeroize::Zeroizing;

/// The shortest derived form (base64, URL-encoded) that is redacted.
pub const MIN_DERIVED: usize = 6;
/// RFC 3986's unreserved characters stay as they are in most URL encoders.
const URL_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
/// As a path encoder (and minijinja's `urlencode`) leaves it: `/` too.
const URL_PATH: &AsciiSet = &URL_COMPONENT.remove(b'/');

/// Replaces the values of the secrets one attempt used. `Redactor::default()` replaces nothing.
#[derive(Default)]
pub struct Redactor {
    matcher: Option<AhoCorasick>,
    /// The replacement of each pattern, by pattern index.
    replacements: Vec<String>,
}

impl Redactor {
    /// A redactor for `secrets` (name, value).
    pub fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Redactor {
        let mut patterns: Vec<Zeroizing<String>> = Vec::new();
        let mut replacements = Vec::new();
        for (name, value) in secrets {
            for form in forms(value) {
                if !patterns.iter().any(|p| p.as_str() == form.as_str()) {
                    patterns.push(form);
                    replacements.push(format!("[secret:{name}]"));
                }
            }
        }
        if patterns.is_empty() {
            return Redactor::default();
        }
        // Built for every attempt that uses secrets, so built fast: a contiguous NFA takes a
        // fraction of a DFA's construction time and scans outputs nearly as fast.
        let matcher = AhoCorasickBuilder::new()
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .match_kind(MatchKind::LeftmostLongest)
            .build(patterns.iter().map(|p| p.as_bytes()))
            .expect("an automaton of a few hundred patterns");
        Redactor { matcher: Some(matcher), replacements }
    }

    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// `text` with every form of every secret replaced.
    pub fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.matcher {
            Some(matcher) if matcher.is_match(text) => Cow::Owned(matcher.replace_all(text, &self.replacements)),
            _ => Cow::Borrowed(text),
        }
    }

    /// Redacts `text` in place.
    pub fn string(&self, text: &mut String) {
        if let Cow::Owned(redacted) = self.text(text) {
            *text = redacted;
        }
    }

    /// Redacts every string (keys too) and number of `value` in place; a number that was a
    /// secret becomes the replacement text.
    pub fn value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(text) => self.string(text),
            Value::Number(n) => {
                if let Cow::Owned(redacted) = self.text(&n.to_string()) {
                    *value = Value::String(redacted);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.value(item)),
            Value::Object(fields) => {
                let keys_hit = fields.keys().any(|k| matches!(self.text(k), Cow::Owned(_)));
                if keys_hit {
                    let old = std::mem::take(fields);
                    *fields = old.into_iter().map(|(k, v)| (self.text(&k).into_owned(), v)).collect();
                }
                fields.values_mut().for_each(|item| self.value(item));
            }
            Value::Null | Value::Bool(_) => {}
        }
    }
}

/// Every form of `value` redaction looks for.
fn forms(value: &str) -> Vec<Zeroizing<String>> {
    if value.is_empty() {
        return Vec::new();
    }
    let mut forms = vec![Zeroizing::new(value.to_owned())];
    let mut derived = Vec::new();
    if let Ok(json) = serde_json::to_string(value) {
        derived.push(json[1..json.len() - 1].to_owned());
    }
    let upper = utf8_percent_encode(value, NON_ALPHANUMERIC).to_string();
    derived.push(upper.clone());
    derived.push(lower_hex_escapes(&upper));
    for set in [URL_COMPONENT, URL_PATH] {
        let encoded = utf8_percent_encode(value, set).to_string();
        derived.push(lower_hex_escapes(&encoded));
        derived.push(encoded);
    }
    derived.push(url::form_urlencoded::byte_serialize(value.as_bytes()).collect());
    let bytes = value.as_bytes();
    derived.push(STANDARD.encode(bytes));
    derived.push(URL_SAFE.encode(bytes));
    for alignment in 0..3 {
        derived.push(embedded_base64(bytes, alignment, &STANDARD_NO_PAD));
        derived.push(embedded_base64(bytes, alignment, &URL_SAFE_NO_PAD));
    }
    for form in derived {
        let form = Zeroizing::new(form);
        if form.len() >= MIN_DERIVED && !forms.iter().any(|f| f.as_str() == form.as_str()) {
            forms.push(form);
        }
    }
    forms
}

/// The characters of `base64(prefix || value)` that only `value` decides, for a prefix of
/// `alignment` bytes (0, 1 or 2) and any bytes after it.
fn embedded_base64(value: &[u8], alignment: usize, engine: &impl base64::Engine) -> String {
    let mut padded = Zeroizing::new(vec![0u8; alignment]);
    padded.extend_from_slice(value);
    let encoded = Zeroizing::new(engine.encode(padded.as_slice()));
    // The first characters mix in the prefix's bits; the last mixes in the next byte's, unless
    // the bytes end on a 3-byte boundary.
    let skip = [0, 2, 3][alignment];
    let keep_end = if padded.len().is_multiple_of(3) { encoded.len() } else { encoded.len() - 1 };
    encoded.get(skip..keep_end).unwrap_or_default().to_owned()
}

fn lower_hex_escapes(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut chars = encoded.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            out.extend(chars.by_ref().take(2).map(|h| h.to_ascii_lowercase()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TOKEN: &str = "tok/en+val?ue=42&x";

    fn redactor() -> Redactor {
        Redactor::new([("TOKEN", TOKEN), ("OTHER", "another-secret-value")])
    }

    #[test]
    fn the_value_and_its_encodings_are_replaced_by_the_secrets_name() {
        let r = redactor();
        let encodings = [
            TOKEN.to_owned(),
            STANDARD.encode(TOKEN),
            URL_SAFE.encode(TOKEN),
            STANDARD_NO_PAD.encode(TOKEN),
            utf8_percent_encode(TOKEN, NON_ALPHANUMERIC).to_string(),
            utf8_percent_encode(TOKEN, NON_ALPHANUMERIC).to_string().to_lowercase(),
            url::form_urlencoded::byte_serialize(TOKEN.as_bytes()).collect(),
            utf8_percent_encode(TOKEN, URL_PATH).to_string(),
        ];
        for encoded in encodings {
            let text = format!("before {encoded} after");
            let redacted = r.text(&text);
            assert!(redacted.contains("[secret:TOKEN]") && !redacted.contains(&encoded), "{encoded}: {redacted}");
        }
        assert_eq!(r.text("no secrets here"), "no secrets here");
    }

    #[test]
    fn a_value_inside_the_base64_of_a_longer_text_is_found_at_every_alignment() {
        let r = redactor();
        for prefix in ["", "x", "u:", "us:", "user:"] {
            for engine in [&STANDARD, &URL_SAFE] {
                let basic = engine.encode(format!("{prefix}{TOKEN}!tail"));
                let redacted = r.text(&basic);
                assert!(redacted.contains("[secret:TOKEN]"), "{prefix}: {basic} -> {redacted}");
            }
        }
    }

    #[test]
    fn every_string_key_and_number_of_a_json_value_is_redacted() {
        let r = Redactor::new([("PIN", "12345678")]);
        let mut value = json!({"a": ["x 12345678 y", 12345678], "12345678": {"n": 1}});
        r.value(&mut value);
        assert_eq!(value, json!({"a": ["x [secret:PIN] y", "[secret:PIN]"], "[secret:PIN]": {"n": 1}}));
    }

    #[test]
    fn the_longest_form_wins_and_short_derived_forms_are_left_out() {
        let r = Redactor::new([("A", "abc"), ("B", "abcdef")]);
        assert_eq!(r.text("xabcdefx abc"), "x[secret:B]x [secret:A]");
        assert!(Redactor::default().is_empty());
        assert_eq!(forms("ab").len(), 1, "only the value itself");
    }
}
