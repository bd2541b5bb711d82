//! The wire forms a type cannot show by itself: absent versus `null`, and flattened settings.

use super::*;
use chrono::{TimeZone, Utc};
use serde_json::json;

fn at() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 1, 2, 3, 4, 5).unwrap()
}

fn retention(audit_days: Option<Option<i32>>) -> Retention {
    let days = (Some(7), None, None, None);
    Retention {
        scope: "default".into(),
        inherited: false,
        succeeded_days: days.0,
        failed_days: days.1,
        canceled_days: days.2,
        timed_out_days: days.3,
        audit_days,
    }
}

#[test]
fn a_double_option_is_absent_null_or_a_value_both_ways() {
    for (value, audit) in [(None, None), (Some(None), Some(&json!(null))), (Some(Some(30)), Some(&json!(30)))] {
        let sent = serde_json::to_value(retention(value)).unwrap();
        assert_eq!(sent.get("audit_days"), audit, "{sent}");
        assert_eq!(sent["failed_days"], json!(null), "a plain Option is always sent");
        let read: Retention = serde_json::from_value(sent).unwrap();
        assert_eq!(read.audit_days, value);
    }
}

#[test]
fn status_counts_name_every_status_with_zero_for_none() {
    let counts = StatusCounts::of([(crate::InstanceStatus::Failed, 3)]);
    assert_eq!(counts.0.len(), crate::InstanceStatus::ALL.len());
    assert_eq!(counts.get(crate::InstanceStatus::Failed), 3);
    assert_eq!(serde_json::to_value(&counts).unwrap()["running"], json!(0));
}

#[test]
fn a_trigger_keeps_its_settings_beside_its_fields_and_a_flag_is_sent_only_when_set() {
    let sent = json!({
        "id": "t", "workflow_id": "w", "kind": "cron", "name": null, "paused": false,
        "created_at": at(), "updated_at": at(), "next_fire_at": null, "pending_fire_at": null,
        "expression": "0 * * * *", "timezone": "UTC",
    });
    let trigger: Trigger = serde_json::from_value(sent.clone()).unwrap();
    assert_eq!(trigger.settings["expression"], json!("0 * * * *"));
    assert_eq!(trigger.next_fire_at, Some(None));
    assert_eq!(trigger.url, None);
    assert_eq!(serde_json::to_value(&trigger).unwrap(), sent);

    let first = HookAnswer { instance_id: "i".into(), duplicate: false };
    assert_eq!(serde_json::to_value(first).unwrap(), json!({"instance_id": "i"}));
}
