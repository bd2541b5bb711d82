//! Bulk actions on the instances a list filter shows: the request body for the API's
//! `POST /instances/{retry,cancel,purge}`, and how a preview and a job's progress read.

use crate::instance_filter::InstanceFilter;
use trellis_model::api::{BulkAnswer, BulkRequest, InstanceFilter as ApiFilter, Job};
use trellis_model::{JobKind, JobStatus};

/// The bulk actions in the order the bar offers them.
pub const ACTIONS: [JobKind; 3] = [JobKind::Retry, JobKind::Cancel, JobKind::Purge];

/// The action's button label.
pub fn label(action: JobKind) -> &'static str {
    match action {
        JobKind::Retry => "Retry",
        JobKind::Cancel => "Cancel",
        JobKind::Purge => "Purge",
    }
}

/// What the action does to one instance, for the preview's sentence.
fn done(action: JobKind) -> &'static str {
    match action {
        JobKind::Retry => "retried from their failed nodes",
        JobKind::Cancel => "canceled",
        JobKind::Purge => "purged with their whole history",
    }
}

/// The body of a bulk request: for the `selected` rows when there are any, else for everything
/// `filter` shows. An empty filter says `all`, as the API demands, so acting on every instance
/// is always explicit.
pub fn request(filter: &InstanceFilter, selected: &[String], dry_run: bool) -> BulkRequest {
    let filter = if selected.is_empty() {
        filter.to_api()
    } else {
        ApiFilter { ids: selected.to_vec(), ..ApiFilter::default() }
    };
    BulkRequest { all: filter.is_empty(), filter, dry_run }
}

/// The preview's lines: how many the action applies to, and how many it skips by status.
pub fn preview_lines(action: JobKind, answer: &BulkAnswer) -> Vec<String> {
    if answer.matched == 0 {
        let mut lines =
            vec![format!("Nothing to {}: no instance this filter shows can be {}.", action.as_str(), done(action))];
        lines.extend(skipped_line(answer));
        return lines;
    }
    let noun = if answer.matched == 1 { "instance" } else { "instances" };
    let mut lines = vec![format!("{} {noun} will be {}.", answer.matched, done(action))];
    lines.extend(skipped_line(answer));
    lines
}

fn skipped_line(answer: &BulkAnswer) -> Option<String> {
    (answer.skipped > 0).then(|| {
        let by: Vec<String> = answer
            .by_status
            .0
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(status, n)| format!("{n} {}", status.replace('_', " ")))
            .collect();
        format!("{} skipped: the action does not apply to their status (matching: {}).", answer.skipped, by.join(", "))
    })
}

/// A job is over once it succeeded, failed or was canceled.
pub fn job_finished(job: &Job) -> bool {
    job.status.is_terminal()
}

/// The progress line under the bar: `retry job running: 120 / 500 processed, 2 not retried`.
/// It speaks of the job, not of the runs it acted on: a retry job that finished says nothing of
/// how the retried runs end (they go on running), so it never reads "succeeded".
pub fn progress_text(job: &Job) -> String {
    let phase = match job.status {
        JobStatus::Queued => "queued",
        JobStatus::Running => "running",
        JobStatus::Succeeded => "finished",
        JobStatus::Failed => "stopped",
        JobStatus::Canceled => "canceled",
    };
    let mut text = format!("{} job {phase}: {} / {} processed", job.kind, job.processed, job.matched);
    if job.failed > 0 {
        let verb = match job.kind {
            JobKind::Retry => "retried",
            JobKind::Cancel => "canceled",
            JobKind::Purge => "purged",
        };
        text.push_str(&format!(", {} could not be {verb}", job.failed));
    }
    if let Some(e) = &job.error {
        text.push_str(&format!(" — {e}"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use trellis_model::api::StatusCounts;
    use trellis_model::InstanceStatus;

    fn answer(matched: i64, skipped: i64) -> BulkAnswer {
        BulkAnswer {
            action: JobKind::Purge,
            dry_run: true,
            filter: json!({}),
            matched,
            skipped,
            by_status: StatusCounts::of([(InstanceStatus::Failed, matched), (InstanceStatus::Running, skipped)]),
            sample: None,
            job_id: None,
            status: None,
        }
    }

    #[test]
    fn the_request_carries_the_filter_and_an_empty_one_says_all() {
        let filter = InstanceFilter { status: vec![InstanceStatus::Failed], version: Some(2), ..Default::default() };
        let body = serde_json::to_value(request(&filter, &[], true)).unwrap();
        assert_eq!(body, json!({"filter": {"status": ["failed"], "version": 2}, "dry_run": true}));
        let every = serde_json::to_value(request(&InstanceFilter::default(), &[], false)).unwrap();
        assert_eq!(every, json!({"filter": {}, "dry_run": false, "all": true}));
    }

    #[test]
    fn selected_rows_replace_the_filter() {
        let filter = InstanceFilter { status: vec![InstanceStatus::Failed], ..Default::default() };
        let body = serde_json::to_value(request(&filter, &["a".to_owned(), "b".to_owned()], true)).unwrap();
        assert_eq!(body, json!({"filter": {"ids": ["a", "b"]}, "dry_run": true}));
    }

    #[test]
    fn the_preview_says_how_many_and_why_some_are_skipped() {
        let lines = preview_lines(JobKind::Purge, &answer(3, 2));
        assert_eq!(lines[0], "3 instances will be purged with their whole history.");
        assert!(lines[1].starts_with("2 skipped"), "{lines:?}");
        assert!(lines[1].contains("2 running") && lines[1].contains("3 failed"));
        assert!(preview_lines(JobKind::Cancel, &answer(0, 0))[0].starts_with("Nothing to cancel"));
    }

    #[test]
    fn progress_reads_processed_of_matched() {
        let job = Job {
            id: "j".into(),
            kind: JobKind::Retry,
            filter: json!({}),
            status: JobStatus::Running,
            matched: 10,
            processed: 4,
            failed: 1,
            error: None,
            created_by: "admin".into(),
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        };
        assert_eq!(progress_text(&job), "retry job running: 4 / 10 processed, 1 could not be retried");
        assert!(!job_finished(&job));
        let done = Job { status: JobStatus::Succeeded, processed: 10, failed: 0, ..job };
        assert_eq!(progress_text(&done), "retry job finished: 10 / 10 processed");
    }
}
