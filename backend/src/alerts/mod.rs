//! Alerts: rules (`/api/v1/alerts`) that post a signed webhook when an instance ends `failed`
//! or `timed_out`, runs slow, or the queue stays deep.
//!
//! **Recording is exactly once, sending is decoupled.** The transaction that ends an instance
//! badly writes an `alert` work item (`engine/effects.rs`, beside the failure handler's): it
//! cannot be missed by a crash between the end and the alert, and the work queue's lease makes
//! one process handle it. Its handler (`engine/alert_items.rs`) records one delivery row per
//! matching rule, unique per (rule, `{instance}:{run}`), so a redone item or a second process
//! records nothing new. (A poller over ended instances after a watermark would miss ends that
//! commit out of order, and needs the same unique key anyway.) `slow` and `queue_depth` rules
//! are judged periodically by the `Watcher` (`watch.rs`) with keys that are the same in every
//! process. The `Sender` (`send.rs`, every process) leases due deliveries and posts them
//! concurrently (bounded), each attempt with its own timeout, retried with exponential backoff
//! up to `MAX_ATTEMPTS`; each attempt is logged (`alert_attempts`).
//!
//! **Dedupe per (rule, failure group)**: within a rule's `dedupe_ms` of a delivery for the same
//! failure group (workflow, failed node, error class), a later failure is recorded
//! `suppressed` and counted on it, not sent (decided holding the rule's row lock).
//!
//! Bodies carry what the instance row holds: its error is stored redacted
//! (`engine::results::sanitized`), so no secret value reaches a receiver.

mod approval;
pub use approval::{approval_body, approval_url};

pub mod send;
pub mod watch;

use serde_json::{json, Value};
use trellis_model::api::AlertWhen;
use uuid::Uuid;

/// Attempts per delivery before it is given up (`failed`).
pub const MAX_ATTEMPTS: i32 = 5;

/// How deliveries are sent.
#[derive(Debug, Clone, Copy)]
pub struct AlertSettings {
    /// One attempt's deadline (connect, send, answer).
    pub timeout: std::time::Duration,
    /// The wait before the second attempt; doubled for each one after.
    pub backoff: std::time::Duration,
    /// Deliveries posted at once by one process.
    pub concurrency: usize,
    /// How often due deliveries are looked for, and slow and queue rules judged.
    pub every: std::time::Duration,
}

impl AlertSettings {
    /// Read from the server's settings (each held to a sane least).
    pub fn from_config(c: &crate::config::ServeConfig) -> AlertSettings {
        let ms = |ms: u64, least: u64| std::time::Duration::from_millis(ms.max(least));
        AlertSettings {
            timeout: ms(c.alert_timeout_ms, 100),
            backoff: ms(c.alert_backoff_ms, 10),
            concurrency: c.alert_concurrency.max(1),
            every: ms(c.alert_poll_ms, 10),
        }
    }
}

/// What an alert is about: an instance that ended, or runs slow.
pub struct InstanceFacts<'a> {
    pub event: AlertWhen,
    pub instance: Uuid,
    pub run: i64,
    pub version: i64,
    pub workflow: Uuid,
    pub workflow_name: &'a str,
    pub status: &'a str,
    pub error: Option<&'a str>,
    pub failed_node: Option<&'a str>,
    /// `slow`: the node past its threshold, and the threshold.
    pub slow_node: Option<(&'a str, i64)>,
}

/// The link to an instance's page: absolute with `TRELLIS_PUBLIC_URL`, else a path.
pub fn instance_url(public_url: Option<&str>, instance: Uuid) -> String {
    let path = format!("/instances/{instance}");
    match public_url {
        Some(base) => format!("{}{path}", base.trim_end_matches('/')),
        None => path,
    }
}

/// The JSON posted for an instance alert, with a Slack-compatible `text`.
pub fn instance_body(rule: (&Uuid, &str), facts: &InstanceFacts<'_>, url: &str) -> Value {
    let event = facts.event.as_str();
    let what = match (facts.event, facts.failed_node, facts.slow_node) {
        (AlertWhen::Slow, _, Some((node, ms))) => format!("is slow: node `{node}` has run over {ms} ms"),
        (AlertWhen::TimedOut, _, _) => "timed out".to_owned(),
        (_, Some(node), _) => format!("failed at node `{node}`"),
        _ => "failed".to_owned(),
    };
    let error = facts.error.map(|e| format!(": {}", clip(e, 500))).unwrap_or_default();
    let text = format!(
        "Trellis: workflow “{}” instance {} {}{} {}",
        slack_escape(facts.workflow_name),
        facts.instance,
        slack_escape(&what),
        slack_escape(&error),
        slack_link(url, "Open the run"),
    );
    json!({
        "type": format!("instance.{event}"),
        "event": event,
        "rule": {"id": rule.0, "name": rule.1},
        "instance": {
            "id": facts.instance, "url": url, "status": facts.status, "version": facts.version, "run": facts.run,
            "error": facts.error, "failed_node": facts.failed_node,
            "slow_node": facts.slow_node.map(|(node, ms)| json!({"id": node, "slow_after_ms": ms})),
        },
        "workflow": {"id": facts.workflow, "name": facts.workflow_name},
        "text": text,
    })
}

/// `text` as Slack reads it: `<...>` is markup there (`<!channel>` pings everyone in the
/// channel, `<https://x|label>` is a link under any label), and `&` starts an entity. A workflow
/// name or an error is written by whoever can make a run fail, so it is escaped as Slack asks;
/// the structured fields keep the raw text.
pub fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A Slack link to `url`, only when it is absolute: Slack cannot open a path (no
/// `TRELLIS_PUBLIC_URL`), so that is written as plain text instead.
pub(crate) fn slack_link(url: &str, label: &str) -> String {
    if url.starts_with("https://") || url.starts_with("http://") {
        format!("<{}|{label}>", url.replace('&', "&amp;").replace('<', "%3C").replace('>', "%3E").replace('|', "%7C"))
    } else {
        format!("(run: {})", slack_escape(url))
    }
}

/// The JSON posted when a queue stays deep.
pub fn queue_body(
    rule: (&Uuid, &str),
    workflow: Option<(Uuid, &str)>,
    depth: i64,
    threshold: i64,
    for_ms: i64,
) -> Value {
    let scope =
        workflow.map_or_else(|| "all workflows".to_owned(), |(_, name)| format!("workflow “{}”", slack_escape(name)));
    let text = format!("Trellis: {depth} instances queued for {scope}, over {threshold} for {for_ms} ms or more");
    json!({
        "type": "queue.depth",
        "event": "queue_depth",
        "rule": {"id": rule.0, "name": rule.1},
        "workflow": workflow.map(|(id, name)| json!({"id": id, "name": name})),
        "queue": {"depth": depth, "threshold": threshold, "for_ms": for_ms},
        "text": text,
    })
}

/// The JSON of a "Send test" delivery.
pub fn test_body(rule: (&Uuid, &str)) -> Value {
    json!({
        "type": "test",
        "event": "test",
        "rule": {"id": rule.0, "name": rule.1},
        "text": format!("Trellis: a test of the alert rule “{}”", slack_escape(rule.1)),
    })
}

/// The failure group an instance's failure belongs to (as `GET /failures` groups them).
pub fn group_key(workflow: Uuid, failed_node: Option<&str>, error_class: Option<&str>) -> String {
    format!("{workflow}\u{1f}{}\u{1f}{}", failed_node.unwrap_or_default(), error_class.unwrap_or_default())
}

fn clip(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_alert_names_the_instance_workflow_node_and_link() {
        let (rule, instance, workflow) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let facts = InstanceFacts {
            event: AlertWhen::Failed,
            instance,
            run: 1,
            version: 2,
            workflow,
            workflow_name: "orders",
            status: "failed",
            error: Some("node `call` failed: boom"),
            failed_node: Some("call"),
            slow_node: None,
        };
        let url = instance_url(Some("https://t.example/"), instance);
        let body = instance_body((&rule, "ops"), &facts, &url);
        assert_eq!(body["instance"]["url"], format!("https://t.example/instances/{instance}"));
        assert_eq!((&body["workflow"]["name"], &body["instance"]["failed_node"]), (&json!("orders"), &json!("call")));
        let text = body["text"].as_str().unwrap();
        assert!(
            text.contains("“orders”") && text.contains("failed at node `call`: node `call` failed: boom"),
            "{text}"
        );
    }

    fn failed_with<'a>(error: &'a str, workflow_name: &'a str) -> InstanceFacts<'a> {
        InstanceFacts {
            event: AlertWhen::Failed,
            instance: Uuid::nil(),
            run: 1,
            version: 1,
            workflow: Uuid::nil(),
            workflow_name,
            status: "failed",
            error: Some(error),
            failed_node: Some("a<b>&c"),
            slow_node: None,
        }
    }

    #[test]
    fn markup_in_a_name_a_node_or_an_error_is_escaped_in_the_text_only() {
        let error = "<!channel> see <https://evil.example|your bank> & <@U123>";
        let facts = failed_with(error, "<!here> orders");
        let url = instance_url(Some("https://t.example"), Uuid::nil());
        let body = instance_body((&Uuid::nil(), "ops"), &facts, &url);
        let text = body["text"].as_str().unwrap();
        assert!(
            text.contains("“&lt;!here&gt; orders”")
                && text.contains("node `a&lt;b&gt;&amp;c`")
                && text.contains(": &lt;!channel&gt; see &lt;https://evil.example|your bank&gt; &amp; &lt;@U123&gt;"),
            "{text}"
        );
        // The only markup left is the run's own link.
        let link = format!("<https://t.example/instances/{}|Open the run>", Uuid::nil());
        assert!(text.ends_with(&link), "{text}");
        assert_eq!(text.matches('<').count(), 1, "{text}");
        assert_eq!(
            (body["instance"]["error"].as_str(), body["workflow"]["name"].as_str()),
            (Some(error), Some("<!here> orders"))
        );
        assert_eq!(body["instance"]["failed_node"], "a<b>&c");
    }

    #[test]
    fn without_a_public_url_the_run_is_named_in_plain_text_not_linked() {
        let url = instance_url(None, Uuid::nil());
        let body = instance_body((&Uuid::nil(), "ops"), &failed_with("boom", "orders"), &url);
        let text = body["text"].as_str().unwrap();
        assert!(text.ends_with(&format!("(run: /instances/{})", Uuid::nil())), "{text}");
        assert!(!text.contains('<') && !text.contains("|Open"), "{text}");
        assert_eq!(body["instance"]["url"], url);
    }

    #[test]
    fn queue_and_test_texts_escape_names_too() {
        let q = queue_body((&Uuid::nil(), "q"), Some((Uuid::nil(), "<!channel>")), 5, 1, 10);
        assert!(q["text"].as_str().unwrap().contains("“&lt;!channel&gt;”"), "{q}");
        let t = test_body((&Uuid::nil(), "<!here>"));
        assert!(t["text"].as_str().unwrap().ends_with("“&lt;!here&gt;”"), "{t}");
        assert_eq!(t["rule"]["name"], "<!here>");
    }

    #[test]
    fn long_errors_are_clipped_in_the_text_only() {
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
    }
}
