//! What the alerts page decides without a browser: the rule a filled-in form asks for (the
//! form takes seconds and minutes, the API milliseconds), and the words a rule and a delivery
//! are shown with.

use trellis_model::api::{AlertAttempt, AlertDelivery, AlertRule, AlertWhen, NewAlertRule};
use trellis_model::AlertDeliveryStatus;

/// The form as typed: every field text, so a half-typed number is kept, not lost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlertDraft {
    pub name: String,
    pub when: String,
    /// A workflow id, or empty for every workflow.
    pub workflow: String,
    pub url: String,
    /// `queue_depth`: more than this many queued...
    pub threshold: String,
    /// ...for this many seconds.
    pub for_secs: String,
    /// Later failures of the same group within this many minutes are counted, not sent.
    pub dedupe_mins: String,
}

/// A field the form refuses before sending: the API's name for it and what to fix.
pub type FieldError = (&'static str, String);

/// The rule to create, or the first field to fix, named as the API names it (so the form shows
/// its own refusals and the server's in the same place).
pub fn rule_from(draft: &AlertDraft) -> Result<NewAlertRule, FieldError> {
    if draft.name.trim().is_empty() {
        return Err(("name", "Give the alert a name".to_owned()));
    }
    if draft.url.trim().is_empty() {
        return Err(("url", "Give the address to post to".to_owned()));
    }
    let when = AlertWhen::parse(&draft.when).ok_or(("when", "Choose what to be told about".to_owned()))?;
    let queue = when == AlertWhen::QueueDepth;
    let threshold = if queue {
        Some(
            whole("threshold", &draft.threshold, 1)?
                .ok_or(("threshold", "Give the queue depth to alert over".into()))?,
        )
    } else {
        None
    };
    let for_ms = if queue { whole("for_ms", &draft.for_secs, 1_000)? } else { None };
    Ok(NewAlertRule {
        name: draft.name.trim().to_owned(),
        when,
        // A backup is the whole database's: no workflow narrows it.
        workflow: Some(draft.workflow.trim())
            .filter(|w| !w.is_empty() && when != AlertWhen::BackupFailed)
            .map(str::to_owned),
        url: draft.url.trim().to_owned(),
        threshold,
        for_ms,
        dedupe_ms: whole("dedupe_ms", &draft.dedupe_mins, 60_000)?,
    })
}

/// A whole number of units (0 or more) as `unit`s of ms; empty is none.
fn whole(field: &'static str, text: &str, unit: i64) -> Result<Option<i64>, FieldError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<i64>() {
        Ok(n) if n >= 0 => n.checked_mul(unit).map(Some).ok_or((field, "That is too large".to_owned())),
        _ => Err((field, "Use a whole number, 0 or more".to_owned())),
    }
}

/// The choices of "When", in the order offered.
pub const WHEN_CHOICES: [(AlertWhen, &str); 6] = [
    (AlertWhen::Failed, "An instance fails"),
    (AlertWhen::TimedOut, "An instance times out"),
    (AlertWhen::Slow, "A node runs slow"),
    (AlertWhen::QueueDepth, "The queue grows"),
    (AlertWhen::BackupFailed, "A scheduled backup fails"),
    (AlertWhen::ApprovalRequested, "An approval is requested"),
];

/// What a rule is told about, in words: "An instance fails", "Queue over 50 for 2 min".
pub fn condition(rule: &AlertRule) -> String {
    match rule.when {
        AlertWhen::Failed => "An instance fails".to_owned(),
        AlertWhen::TimedOut => "An instance times out".to_owned(),
        AlertWhen::Slow => "A node runs slow".to_owned(),
        AlertWhen::BackupFailed => "A scheduled backup fails".to_owned(),
        AlertWhen::ApprovalRequested => "An approval is requested".to_owned(),
        AlertWhen::QueueDepth => {
            let over = format!("Queue over {}", rule.threshold.unwrap_or(0));
            match rule.for_ms.filter(|ms| *ms > 0) {
                Some(ms) => format!("{over} for {}", span(ms)),
                None => over,
            }
        }
    }
}

/// "Repeats within 10 min counted" when the rule has a dedupe window.
pub fn dedupe(rule: &AlertRule) -> Option<String> {
    rule.dedupe_ms.filter(|ms| *ms > 0).map(|ms| format!("repeats within {} counted, not sent", span(ms)))
}

/// A length of time to read at a glance: "45 s", "2 min", "1 h 30 min".
pub fn span(ms: i64) -> String {
    let secs = ms / 1_000;
    match secs {
        _ if ms < 1_000 => format!("{ms} ms"),
        0..=119 => format!("{secs} s"),
        120..=7_199 => format!("{} min", secs / 60),
        _ => match (secs / 3_600, secs % 3_600 / 60) {
            (h, 0) => format!("{h} h"),
            (h, m) => format!("{h} h {m} min"),
        },
    }
}

/// How the last try went: "200", "500 · 3 tries", "timed out", or "not sent yet".
pub fn last_try(d: &AlertDelivery) -> String {
    let Some(last) = d.attempts.iter().max_by_key(|a| a.attempt) else {
        return if d.status == AlertDeliveryStatus::Suppressed { "—".to_owned() } else { "not sent yet".to_owned() };
    };
    let outcome = attempt_outcome(last);
    match d.attempts.len() {
        1 => outcome,
        n => format!("{outcome} · {n} tries"),
    }
}

/// One try: the receiver's status, else why there was none.
pub fn attempt_outcome(a: &AlertAttempt) -> String {
    match (a.status_code, &a.error) {
        (Some(code), _) => code.to_string(),
        (None, Some(why)) => why.clone(),
        (None, None) => "no answer".to_owned(),
    }
}

#[cfg(test)]
#[path = "alert_rules_tests.rs"]
mod tests;
