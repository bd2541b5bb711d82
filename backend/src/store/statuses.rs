//! The sets of instance statuses the SQL filters by, as `IN (...)` lists. Each list is
//! written out (so the statements read whole) and a test checks it against
//! [`InstanceStatus`], so a status added to the model cannot be missing from a list.

use trellis_model::InstanceStatus;

/// Finished instances: the only ones ever purged.
pub const TERMINAL: &str = "('succeeded', 'failed', 'canceled', 'timed_out')";
/// Unfinished instances: the ones a cancel applies to, and the live ones of a business key.
pub const UNFINISHED: &str = "('queued', 'running', 'paused')";
/// What a retry re-runs: instances that finished without succeeding.
pub const RETRYABLE: &str = "('failed', 'canceled', 'timed_out')";
/// Instances holding one of their workflow's concurrency slots.
pub const ACTIVE: &str = "('running', 'paused')";

/// A set of instance statuses a statement selects by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusSet {
    Terminal,
    Unfinished,
    Retryable,
    Active,
}

impl StatusSet {
    pub const ALL: [StatusSet; 4] =
        [StatusSet::Terminal, StatusSet::Unfinished, StatusSet::Retryable, StatusSet::Active];

    pub fn contains(self, status: InstanceStatus) -> bool {
        use InstanceStatus::*;
        match self {
            StatusSet::Terminal => status.is_terminal(),
            StatusSet::Unfinished => !status.is_terminal(),
            StatusSet::Retryable => matches!(status, Failed | Canceled | TimedOut),
            StatusSet::Active => matches!(status, Running | Paused),
        }
    }

    /// The set as an SQL `IN` list.
    pub fn sql(self) -> &'static str {
        match self {
            StatusSet::Terminal => TERMINAL,
            StatusSet::Unfinished => UNFINISHED,
            StatusSet::Retryable => RETRYABLE,
            StatusSet::Active => ACTIVE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sql_list_names_exactly_the_statuses_of_its_set() {
        for set in StatusSet::ALL {
            let names: Vec<String> =
                InstanceStatus::ALL.iter().filter(|s| set.contains(**s)).map(|s| format!("'{s}'")).collect();
            assert_eq!(set.sql(), format!("({})", names.join(", ")), "{set:?}");
        }
    }
}
