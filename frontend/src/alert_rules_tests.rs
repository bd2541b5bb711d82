use super::*;
use chrono::Utc;

fn draft(when: &str) -> AlertDraft {
    AlertDraft {
        name: " Pager ".into(),
        when: when.into(),
        url: " http://127.0.0.1:9/hook ".into(),
        ..Default::default()
    }
}

#[test]
fn a_failure_rule_is_trimmed_and_has_no_queue_fields() {
    let mut d = draft("failed");
    d.threshold = "5".into();
    d.for_secs = "10".into();
    d.dedupe_mins = "10".into();
    let rule = rule_from(&d).unwrap();
    assert_eq!((rule.name.as_str(), rule.url.as_str()), ("Pager", "http://127.0.0.1:9/hook"));
    assert_eq!((rule.when, rule.workflow, rule.threshold, rule.for_ms), (AlertWhen::Failed, None, None, None));
    assert_eq!(rule.dedupe_ms, Some(600_000));
}

#[test]
fn a_queue_rule_needs_a_threshold_and_takes_seconds() {
    let mut d = draft("queue_depth");
    assert_eq!(rule_from(&d).unwrap_err().0, "threshold");
    d.threshold = "50".into();
    d.for_secs = "90".into();
    d.workflow = "wf-1".into();
    let rule = rule_from(&d).unwrap();
    assert_eq!((rule.threshold, rule.for_ms, rule.workflow.as_deref()), (Some(50), Some(90_000), Some("wf-1")));
}

#[test]
fn numbers_that_are_not_whole_or_are_negative_name_their_field() {
    for (text, field) in [("1.5", "dedupe_ms"), ("-1", "dedupe_ms"), ("ten", "dedupe_ms")] {
        let mut d = draft("failed");
        d.dedupe_mins = text.into();
        assert_eq!(rule_from(&d).unwrap_err().0, field, "{text}");
    }
    let mut d = draft("queue_depth");
    d.threshold = "9223372036854775807".into();
    d.for_secs = "9223372036854775807".into();
    assert_eq!(rule_from(&d).unwrap_err().0, "for_ms");
    assert_eq!(rule_from(&draft("sometimes")).unwrap_err().0, "when");
    assert_eq!(rule_from(&AlertDraft { name: " ".into(), ..draft("failed") }).unwrap_err().0, "name");
    assert_eq!(rule_from(&AlertDraft { url: "".into(), ..draft("failed") }).unwrap_err().0, "url");
}

fn rule(when: AlertWhen, threshold: Option<i64>, for_ms: Option<i64>) -> AlertRule {
    AlertRule {
        id: "r".into(),
        name: "n".into(),
        when,
        workflow: None,
        workflow_name: None,
        url: "u".into(),
        threshold,
        for_ms,
        dedupe_ms: None,
        created_by: "admin".into(),
        created_at: Utc::now(),
        can_manage: true,
    }
}

#[test]
fn conditions_read_as_words() {
    assert_eq!(condition(&rule(AlertWhen::Failed, None, None)), "An instance fails");
    assert_eq!(condition(&rule(AlertWhen::QueueDepth, Some(50), Some(120_000))), "Queue over 50 for 2 min");
    assert_eq!(condition(&rule(AlertWhen::QueueDepth, Some(0), Some(0))), "Queue over 0");
    assert_eq!(
        [span(500), span(45_000), span(5_400_000), span(7_200_000), span(9_000_000)],
        ["500 ms", "45 s", "90 min", "2 h", "2 h 30 min"]
    );
}

fn attempt(n: i32, code: Option<i32>, error: Option<&str>) -> AlertAttempt {
    AlertAttempt { attempt: n, at: Utc::now(), status_code: code, error: error.map(str::to_owned) }
}

#[test]
fn the_last_try_says_its_status_or_why_and_how_many_tries() {
    let mut d = AlertDelivery {
        id: "d".into(),
        event: trellis_model::AlertEvent::Failed,
        instance_id: None,
        created_at: Utc::now(),
        status: trellis_model::AlertDeliveryStatus::Pending,
        suppressed: 0,
        attempts: vec![],
    };
    assert_eq!(last_try(&d), "not sent yet");
    d.attempts = vec![attempt(2, None, Some("timed out after 10 s")), attempt(1, Some(500), None)];
    assert_eq!(last_try(&d), "timed out after 10 s · 2 tries");
    d.attempts = vec![attempt(1, Some(200), None)];
    assert_eq!(last_try(&d), "200");
}
