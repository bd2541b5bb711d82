//! What the `Store` trait's SQL (`shared/store.rs`: settings, users, API keys, workflows,
//! drafts, versions) shares with the rest: the workflow column list and `LIKE` escaping.
//! How one SQL body serves both backends: `shared/mod.rs`.

/// Escapes `%`, `_` and `\` so user text matches literally inside a `LIKE` pattern.
pub(super) fn like_pattern(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('%');
    for c in text.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

pub(super) const WORKFLOW_COLUMNS: &str =
    "id, name, description, draft, draft_rev, latest_version, archived, created_at, updated_at";
