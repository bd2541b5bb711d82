//! Workflows as files: one JSON file per workflow with a fixed layout (`id`, `name`,
//! `description`, `definition`; every object's keys sorted inside the definition; two-space
//! indent; a final newline), so the same workflow always gives the same bytes and a git
//! diff shows only what changed. Beside them, `.trellis-sync.json` records which draft
//! revision each file was last pulled or pushed at, so a push can tell a stale draft.

use super::failure::{CliError, CliResult};
use super::input::read_file;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use trellis_model::api::Workflow;

/// The sync record's file name (kept in the folder, committed with the workflows).
pub const STATE_FILE: &str = ".trellis-sync.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowFile {
    /// The workflow on the server; absent in a file for a workflow not created yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub definition: Value,
}

impl WorkflowFile {
    /// A workflow's draft as a file.
    pub fn of(workflow: &Workflow) -> CliResult<WorkflowFile> {
        let definition = serde_json::to_value(&workflow.draft)
            .map_err(|e| CliError::refused(format!("cannot read the draft of {}: {e}", workflow.summary.name)))?;
        Ok(WorkflowFile {
            id: Some(workflow.summary.id.clone()),
            name: workflow.summary.name.clone(),
            description: workflow.summary.description.clone(),
            definition,
        })
    }

    pub fn read(path: &Path) -> CliResult<WorkflowFile> {
        let text = read_file(path, "workflow file")?;
        serde_json::from_str(&text).map_err(|e| {
            CliError::usage(format!(
                "`{}` is not a workflow file ({e}); it needs `name` and `definition` (as `trellis workflow export` writes)",
                path.display()
            ))
        })
    }

    /// The file's bytes: fixed field order, sorted keys below, a final newline.
    pub fn to_text(&self) -> String {
        let file = WorkflowFile { definition: sorted(&self.definition), ..self.clone() };
        let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
        text.push('\n');
        text
    }
}

impl WorkflowFile {
    /// The file as the server would keep it (see [`normalized`]), to compare with a draft.
    pub fn as_saved(&self) -> WorkflowFile {
        WorkflowFile { definition: normalized(&self.definition), ..self.clone() }
    }
}

/// A definition as the server keeps it: read as a definition and written back, so what the
/// server fills in (such as the default `settings`, `{"on_limit": "queue"}`) is there on both
/// sides of a comparison and a hand-written file that leaves it out is not "changed". A
/// definition that does not read is kept as it is (validation says what is wrong with it).
pub fn normalized(definition: &Value) -> Value {
    let parsed = serde_json::from_value::<trellis_model::Definition>(definition.clone());
    match parsed.ok().and_then(|d| serde_json::to_value(d).ok()) {
        Some(saved) => sorted(&saved),
        None => sorted(definition),
    }
}

/// Checks a definition that has no workflow on the server yet, in this process. The server
/// must not compile user expressions in-process (see backend/clippy.toml); the client may, as
/// the browser's designer does: it is the user's own file, checked on the user's own machine.
#[allow(clippy::disallowed_methods)]
pub fn validate_locally(definition: &Value) -> Result<trellis_model::Report, String> {
    let definition = serde_json::from_value(definition.clone()).map_err(|e| e.to_string())?;
    Ok(trellis_model::validate(&definition, &trellis_model::Limits::default()))
}

/// `value` with every object's keys in sorted order, whatever map serde_json was built with.
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect::<Map<_, _>>())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// A file name for a workflow name: lower case, runs of other characters as one `-`.
pub fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_matches('-');
    if slug.is_empty() {
        "workflow".to_owned()
    } else {
        slug.chars().take(80).collect()
    }
}

/// Which draft revision (`etag`) each workflow's file was last pulled or pushed at, and what
/// each file held then, so a pull can tell a file edited since from one it may overwrite.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SyncState {
    #[serde(default)]
    pub server: String,
    /// Workflow id → its draft's etag at the last pull or push.
    #[serde(default)]
    pub etags: BTreeMap<String, String>,
    /// File name → the SHA-256 (hex) of its bytes as the last pull wrote or push sent them.
    #[serde(default)]
    pub digests: BTreeMap<String, String>,
}

impl SyncState {
    pub fn read(dir: &Path) -> CliResult<SyncState> {
        let path = dir.join(STATE_FILE);
        if !path.exists() {
            return Ok(SyncState::default());
        }
        serde_json::from_str(&read_file(&path, "sync record")?)
            .map_err(|e| CliError::usage(format!("`{}` is damaged ({e}); delete it and pull again", path.display())))
    }

    /// True when `text`, the file `name`'s bytes now, is what the last pull or push left.
    pub fn left_as_synced(&self, name: &str, text: &str) -> bool {
        self.digests.get(name).is_some_and(|digest| *digest == crate::digest::sha256_hex(text.as_bytes()))
    }

    /// Records `text` as what the file `name` holds after a pull or push.
    pub fn synced(&mut self, name: &str, text: &str) {
        self.digests.insert(name.to_owned(), crate::digest::sha256_hex(text.as_bytes()));
    }

    pub fn write(&self, dir: &Path) -> CliResult<()> {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        write_if_changed(&dir.join(STATE_FILE), &text).map(drop)
    }
}

/// Writes `text` unless the file already holds it; true when it wrote.
pub fn write_if_changed(path: &Path, text: &str) -> CliResult<bool> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(false);
    }
    std::fs::write(path, text).map_err(|e| CliError::usage(format!("cannot write `{}`: {e}", path.display())))?;
    Ok(true)
}

/// The workflow files in `dir` (`*.json`, not hidden), sorted by name.
pub fn workflow_files(dir: &Path) -> CliResult<Vec<std::path::PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CliError::usage(format!("cannot read the folder `{}`: {e}", dir.display())))?;
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !hidden(p))
        .collect();
    files.sort();
    Ok(files)
}

pub fn hidden(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_has_one_layout_whatever_the_key_order() {
        let a = WorkflowFile {
            id: Some("1".into()),
            name: "n".into(),
            description: None,
            definition: serde_json::from_str(r#"{"nodes":[{"type":"noop","id":"a"}],"edges":[]}"#).unwrap(),
        };
        let b = WorkflowFile {
            definition: serde_json::from_str(r#"{"edges":[],"nodes":[{"id":"a","type":"noop"}]}"#).unwrap(),
            ..a.clone()
        };
        assert_eq!(a.to_text(), b.to_text());
        assert!(a.to_text().starts_with("{\n  \"id\": \"1\",\n  \"name\": \"n\""));
        assert!(a.to_text().ends_with("}\n"));
    }

    #[test]
    fn a_definition_without_settings_reads_as_the_server_saves_it() {
        let bare = serde_json::json!({"nodes": [{"id": "a", "type": "noop"}], "edges": []});
        let saved = normalized(&bare);
        assert!(saved["settings"].is_object(), "{saved}");
        assert_eq!(normalized(&saved), saved);
        let not_a_definition = serde_json::json!({"nodes": 3});
        assert_eq!(normalized(&not_a_definition), not_a_definition);
    }

    #[test]
    fn names_become_file_names() {
        assert_eq!(slug("Nightly ETL: orders"), "nightly-etl-orders");
        assert_eq!(slug("***"), "workflow");
    }
}
