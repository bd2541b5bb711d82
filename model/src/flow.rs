//! Flow control over time (workflow `settings.throttle` and `settings.rate_limit`): at most
//! `limit` starts per `period_ms`, per value of an optional `key` expression over the input.
//! A throttle makes the others wait in order; a rate limit refuses them. The windows slide:
//! in every span of `period_ms`, never more than `limit` (the server counts the starts it let
//! through in the database, so the rule holds across processes and restarts).

use serde::{Deserialize, Serialize};

/// `limit` starts per `period_ms`, per value of `key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// How many starts a window holds (1 to `MAX_WINDOW_LIMIT`).
    pub limit: u32,
    /// How long a window is, in milliseconds (1 to `MAX_WINDOW_PERIOD_MS`).
    pub period_ms: u64,
    /// An expression over the start's input (`input.customer_id`): each value has its own
    /// windows. A start whose key is null or fails to evaluate is refused (422).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// The most starts one window counts: the server keeps one row per start for a window's
/// length, so this bounds what a start reads.
pub const MAX_WINDOW_LIMIT: u32 = 100_000;
/// The longest window: a day.
pub const MAX_WINDOW_PERIOD_MS: u64 = 24 * 3600 * 1000;

impl Window {
    /// What is wrong with the window's numbers, as (field, message) pairs; `name` is the
    /// setting (`throttle`, `rate_limit`). The key's syntax is checked by the caller.
    pub fn problems(&self, name: &str) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        if self.limit == 0 || self.limit > MAX_WINDOW_LIMIT {
            problems.push(("limit", format!("`{name}.limit` must be 1 to {MAX_WINDOW_LIMIT}, not {}", self.limit)));
        }
        if self.period_ms == 0 || self.period_ms > MAX_WINDOW_PERIOD_MS {
            problems.push((
                "period_ms",
                format!(
                    "`{name}.period_ms` must be 1 to {MAX_WINDOW_PERIOD_MS} (a day), not {}; e.g. 1000 for per second",
                    self.period_ms
                ),
            ));
        }
        if self.key.as_deref().is_some_and(|k| k.trim().is_empty()) {
            problems.push((
                "key",
                format!("`{name}.key` is empty; give an expression such as `input.customer_id`, or omit it"),
            ));
        }
        problems
    }

    /// "5 per 1 s", "100 per 1 min" for people.
    pub fn describe(&self) -> String {
        format!("{} per {}", self.limit, crate::flow::period_words(self.period_ms))
    }
}

/// `settings.debounce`: starts of one key less than `period_ms` apart make one instance,
/// started `period_ms` after the last of them (or `max_wait_ms` after the first) with the last
/// one's input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Debounce {
    pub period_ms: u64,
    /// An expression over the input: each value gathers its own bursts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// A burst's instance starts at most this long after its first start, however long the
    /// starts keep coming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait_ms: Option<u64>,
}

impl Debounce {
    /// What is wrong with the numbers and the key's text, as (field, message) pairs.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        let in_range = |n: u64| (1..=MAX_WINDOW_PERIOD_MS).contains(&n);
        if !in_range(self.period_ms) {
            problems.push((
                "period_ms",
                format!("`debounce.period_ms` must be 1 to {MAX_WINDOW_PERIOD_MS} (a day), not {}", self.period_ms),
            ));
        }
        if let Some(max) = self.max_wait_ms.filter(|n| !in_range(*n)) {
            problems.push((
                "max_wait_ms",
                format!("`debounce.max_wait_ms` must be 1 to {MAX_WINDOW_PERIOD_MS} (a day), not {max}; omit it for no bound"),
            ));
        }
        if self.key.as_deref().is_some_and(|k| k.trim().is_empty()) {
            problems.push((
                "key",
                "`debounce.key` is empty; give an expression such as `input.customer_id`, or omit it".into(),
            ));
        }
        problems
    }
}

/// `settings.priority`: a level 1–5 (5 highest), or an expression over the input giving one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum Priority {
    Level(i64),
    Expression(String),
}

pub const LOWEST_PRIORITY: i64 = 1;
pub const HIGHEST_PRIORITY: i64 = 5;
/// The level of instances whose workflow sets none.
pub const DEFAULT_PRIORITY: i64 = 3;
/// How long a queued instance waits to gain one level over newer starts: a priority-1
/// instance goes ahead of a priority-5 start that arrives more than 4 steps after it.
pub const PRIORITY_AGING_MS: i64 = 60_000;

impl Priority {
    /// What is wrong with a fixed level (an expression's syntax is checked by the caller).
    pub fn problem(&self) -> Option<String> {
        match self {
            Priority::Level(n) if !(LOWEST_PRIORITY..=HIGHEST_PRIORITY).contains(n) => {
                Some(format!("`priority` must be {LOWEST_PRIORITY} to {HIGHEST_PRIORITY} (5 highest), not {n}"))
            }
            Priority::Expression(e) if e.trim().is_empty() => {
                Some("`priority` is empty; give a level 1 to 5 or an expression such as `input.tier`".into())
            }
            _ => None,
        }
    }
}

/// The order admission takes a queued instance in (smaller first): its start in milliseconds
/// less one aging step per level above the lowest.
pub fn queue_order(started_ms: i64, level: i64) -> i64 {
    started_ms - (level.clamp(LOWEST_PRIORITY, HIGHEST_PRIORITY) - LOWEST_PRIORITY) * PRIORITY_AGING_MS
}

/// A period in the largest whole unit that fits it: "250 ms", "1 s", "90 s", "5 min", "1 h".
pub fn period_words(ms: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(3_600_000, "h"), (60_000, "min"), (1_000, "s"), (1, "ms")];
    let (size, unit) =
        UNITS.iter().copied().find(|(size, _)| ms >= *size && ms.is_multiple_of(*size)).unwrap_or((1, "ms"));
    format!("{} {unit}", ms / size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(limit: u32, period_ms: u64, key: Option<&str>) -> Window {
        Window { limit, period_ms, key: key.map(str::to_owned) }
    }

    #[test]
    fn numbers_out_of_range_are_named() {
        assert!(window(5, 1000, None).problems("throttle").is_empty());
        let fields: Vec<_> = window(0, 0, Some(" ")).problems("rate_limit").into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["limit", "period_ms", "key"]);
        assert_eq!(window(MAX_WINDOW_LIMIT + 1, 1, None).problems("throttle")[0].0, "limit");
        assert_eq!(window(1, MAX_WINDOW_PERIOD_MS + 1, None).problems("throttle")[0].0, "period_ms");
    }

    #[test]
    fn a_higher_level_goes_first_until_the_lower_has_waited_its_head_start() {
        let p5_now = queue_order(1_000_000, 5);
        assert!(p5_now < queue_order(1_000_000, 1));
        // A priority-1 start four aging steps (and a moment) older goes first.
        assert!(queue_order(1_000_000 - 4 * PRIORITY_AGING_MS - 1, 1) < p5_now);
        assert!(Priority::Level(6).problem().is_some());
        assert_eq!(Priority::Level(5).problem(), None);
        let parsed: Priority = serde_json::from_str("\"input.tier\"").unwrap();
        assert_eq!(parsed, Priority::Expression("input.tier".into()));
    }

    #[test]
    fn periods_read_in_their_largest_whole_unit() {
        assert_eq!(window(5, 1000, None).describe(), "5 per 1 s");
        assert_eq!(period_words(250), "250 ms");
        assert_eq!(period_words(90_000), "90 s");
        assert_eq!(period_words(300_000), "5 min");
        assert_eq!(period_words(7_200_000), "2 h");
    }
}
