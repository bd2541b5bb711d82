//! Instance and node statuses, as the API reports them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum InstanceStatus {
    /// Waiting for a slot under the workflow's `max_concurrent_instances`.
    Queued,
    Running,
    Paused,
    Succeeded,
    Failed,
    Canceled,
    TimedOut,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum NodeStatus {
    /// Not all predecessors have finished.
    Pending,
    /// May run; waiting for a slot under `max_parallel_nodes`.
    Ready,
    Running,
    /// Suspended: on a timer, a signal, an external worker or a retry backoff.
    Waiting,
    Succeeded,
    Failed,
    /// Its incoming edges were not taken (a branch not chosen, a success edge of a failure).
    Skipped,
    Canceled,
    TimedOut,
}

macro_rules! string_forms {
    ($ty:ty { $($variant:ident => $text:literal),* $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$(<$ty>::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(<$ty>::$variant => $text),* }
            }

            pub fn parse(s: &str) -> Option<$ty> {
                match s { $($text => Some(<$ty>::$variant),)* _ => None }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

/// `ALL`, `as_str`, `parse` and `Display` for an enum from its variants' names in text
/// (the same text serde writes, which a test per enum checks).
pub(crate) use string_forms;

string_forms!(InstanceStatus {
    Queued => "queued", Running => "running", Paused => "paused", Succeeded => "succeeded",
    Failed => "failed", Canceled => "canceled", TimedOut => "timed_out",
});

string_forms!(NodeStatus {
    Pending => "pending", Ready => "ready", Running => "running", Waiting => "waiting",
    Succeeded => "succeeded", Failed => "failed", Skipped => "skipped", Canceled => "canceled",
    TimedOut => "timed_out",
});

impl InstanceStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Canceled | Self::TimedOut)
    }
}

impl NodeStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Skipped | Self::Canceled | Self::TimedOut)
    }

    /// Finished unsuccessfully: what `failure` edges react to.
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Failed | Self::TimedOut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_through_their_names() {
        for s in InstanceStatus::ALL {
            assert_eq!(InstanceStatus::parse(s.as_str()), Some(*s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for s in NodeStatus::ALL {
            assert_eq!(NodeStatus::parse(s.as_str()), Some(*s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }
}
