//! The JSON posted when an `approval` node asks people to decide (`when: "approval_requested"`).

use super::{slack_escape, slack_link};
use crate::store::NewApproval;
use serde_json::{json, Value};
use uuid::Uuid;

/// Where an approval's page is: under `TRELLIS_PUBLIC_URL` when set, else a path.
pub fn approval_url(public_url: Option<&str>, approval: Uuid) -> String {
    let path = format!("/approvals/{approval}");
    match public_url {
        Some(base) => format!("{}{path}", base.trim_end_matches('/')),
        None => path,
    }
}

/// The delivery's body, with a Slack-compatible `text` linking to the approval's page.
pub fn approval_body(rule: (&Uuid, &str), approval: &NewApproval, workflow_name: &str, url: &str) -> Value {
    let text = format!(
        "Trellis: workflow “{}” asks for an approval: {} {}",
        slack_escape(workflow_name),
        slack_escape(&approval.title),
        slack_link(url, "Open the approval"),
    );
    json!({
        "type": "approval.requested",
        "event": "approval_requested",
        "rule": {"id": rule.0, "name": rule.1},
        "approval": {
            "id": approval.id, "url": url, "title": approval.title, "description": approval.description,
            "node": approval.node_id, "assignees": approval.assignees, "required": approval.required,
            "due_at": approval.due_at,
        },
        "instance": {"id": approval.instance_id},
        "workflow": {"id": approval.workflow_id, "name": workflow_name},
        "text": text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    #[test]
    fn the_text_links_to_the_page_and_escapes_what_users_wrote() {
        let approval = NewApproval {
            id: Uuid::now_v7(),
            instance_id: Uuid::now_v7(),
            workflow_id: Uuid::now_v7(),
            node_id: "ok".into(),
            attempt: 1,
            title: "Pay <!channel> 5 & more?".into(),
            description: None,
            assignees: Default::default(),
            required: 1,
            allow_starter: false,
            form: None,
            started_by: None,
            created_at: Utc::now(),
            due_at: None,
        };
        let url = approval_url(Some("https://t.example/"), approval.id);
        let body = approval_body((&Uuid::nil(), "r"), &approval, "Payouts", &url);
        let text = body["text"].as_str().unwrap();
        assert!(text.contains("Pay &lt;!channel&gt; 5 &amp; more?"), "{text}");
        assert!(text.ends_with(&format!("<https://t.example/approvals/{}|Open the approval>", approval.id)), "{text}");
        assert_eq!(body["approval"]["title"], "Pay <!channel> 5 & more?");
    }
}
