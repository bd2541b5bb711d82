//! Import and export of workflows as JSON files: `{"name", "description"?, "definition"}`.
//! A file holding only a definition (`{"nodes": ...}`) imports too, named after the file.

use serde::{Deserialize, Serialize};
use trellis_model::api::{CreateWorkflow, Workflow};
use trellis_model::Definition;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Exported {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    definition: Definition,
}

/// The file an export downloads: the workflow's name, description and draft.
pub fn export(workflow: &Workflow) -> String {
    let body = Exported {
        name: workflow.summary.name.clone(),
        description: workflow.summary.description.clone(),
        definition: workflow.draft.clone(),
    };
    serde_json::to_string_pretty(&body).expect("definitions serialize")
}

/// A file name for the export: the workflow's name with anything unusual replaced.
pub fn file_name(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| if c.is_alphanumeric() || c == '-' || c == '_' { c } else { '-' })
        .collect::<String>()
        .trim_matches('-')
        .chars()
        .take(80)
        .collect();
    format!("{}.json", if stem.is_empty() { "workflow" } else { &stem })
}

/// The workflow to create from an imported file's text.
pub fn import(file_name: &str, text: &str) -> Result<CreateWorkflow, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("The file is not JSON: {e}"))?;
    if value.get("definition").is_some() {
        let e: Exported = serde_json::from_value(value).map_err(|e| format!("Not a Trellis workflow export: {e}"))?;
        return Ok(CreateWorkflow { name: e.name, description: e.description, definition: Some(e.definition) });
    }
    let definition: Definition =
        serde_json::from_value(value).map_err(|e| format!("Not a Trellis workflow definition: {e}"))?;
    let name = file_name.trim_end_matches(".json").trim();
    let name = if name.is_empty() { "Imported workflow" } else { name };
    Ok(CreateWorkflow { name: name.to_owned(), description: None, definition: Some(definition) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use trellis_model::api::WorkflowSummary;
    use trellis_model::Node;

    fn workflow() -> Workflow {
        let now = Utc::now();
        let mut draft = Definition::default();
        draft.nodes.push(Node::new("a", "noop"));
        Workflow {
            summary: WorkflowSummary {
                id: "w".into(),
                name: "Orders / EU".into(),
                description: Some("d".into()),
                latest_version: None,
                archived: false,
                created_at: now,
                updated_at: now,
            },
            draft,
            etag: "\"r1\"".into(),
            problems: None,
        }
    }

    #[test]
    fn an_export_imports_back_as_the_same_workflow() {
        let text = export(&workflow());
        let created = import("whatever.json", &text).unwrap();
        assert_eq!(created.name, "Orders / EU");
        assert_eq!(created.description.as_deref(), Some("d"));
        assert_eq!(created.definition, Some(workflow().draft));
        assert_eq!(file_name("Orders / EU"), "Orders---EU.json");
        assert_eq!(file_name("///"), "workflow.json");
    }

    #[test]
    fn a_bare_definition_is_named_after_its_file() {
        let created = import("billing.json", r#"{"nodes": [{"id": "a", "type": "noop"}]}"#).unwrap();
        assert_eq!(created.name, "billing");
        assert_eq!(created.definition.unwrap().nodes.len(), 1);
    }

    #[test]
    fn other_files_are_refused_with_a_reason() {
        assert!(import("x.json", "not json").unwrap_err().starts_with("The file is not JSON"));
        assert!(import("x.json", r#"{"nodez": []}"#).unwrap_err().starts_with("Not a Trellis workflow definition"));
        assert!(import("x.json", r#"{"definition": {}}"#).unwrap_err().starts_with("Not a Trellis workflow export"));
    }
}
