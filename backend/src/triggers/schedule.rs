//! Cron expressions in a time zone (croner, chrono-tz): parsing with what to fix, the next
//! ticks, and which ticks to fire after the fire loop was late or no process was running.

use super::spec::{CatchUp, CronSpec};
use chrono::{DateTime, Duration, DurationRound, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use trellis_model::Issue;

/// The most ticks one claim fires (catch-up `all`, or a loop far behind): the rest are dropped.
pub const MAX_CATCH_UP: usize = 100;
/// The longest expression accepted.
pub const MAX_EXPRESSION_LEN: usize = 200;
/// The most times a preview lists.
pub const MAX_PREVIEW: usize = 100;
/// A tick fired at most this late counts as on time; older ones were missed (no process was
/// running) and the catch-up policy decides about them.
pub fn late_grace() -> Duration {
    Duration::seconds(60)
}

#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    tz: Tz,
}

/// The IANA zone a mistyped name most likely meant: the same name in other case or with
/// spaces for underscores (`europe/berlin`, `New York`), or the zone whose city it names
/// (`Berlin` → `Europe/Berlin`).
pub fn closest_zone(given: &str) -> Option<&'static str> {
    let wanted = given.trim().replace(' ', "_").to_ascii_lowercase();
    if wanted.is_empty() {
        return None;
    }
    let names = || chrono_tz::TZ_VARIANTS.iter().map(|tz| tz.name());
    names().find(|name| name.to_ascii_lowercase() == wanted).or_else(|| {
        names().find(|name| name.rsplit('/').next().is_some_and(|city| city.to_ascii_lowercase() == wanted))
    })
}

impl Schedule {
    /// Parses the expression and the zone; every problem is listed.
    pub fn new(spec: &CronSpec) -> Result<Schedule, Vec<Issue>> {
        let mut issues = Vec::new();
        let cron = parse_expression(&spec.expression)
            .map_err(|m| issues.push(Issue::new("invalid_cron", m).path("expression")))
            .ok();
        let tz = spec.timezone.parse::<Tz>().map_err(|_| {
            let message = match closest_zone(&spec.timezone) {
                Some(zone) => format!("unknown time zone `{}`; did you mean `{zone}`?", spec.timezone),
                None => format!(
                    "unknown time zone `{}`; use an IANA name such as `Europe/Berlin`, `America/New_York` or `UTC`",
                    spec.timezone
                ),
            };
            issues.push(Issue::new("invalid_timezone", message).path("timezone"));
        });
        match (cron, tz) {
            (Some(cron), Ok(tz)) => {
                let schedule = Schedule { cron, tz };
                if schedule.next_after(Utc::now()).is_none() {
                    let message =
                        format!("`{}` never matches a date (e.g. 30 February); pick days that exist", spec.expression);
                    return Err(vec![Issue::new("invalid_cron", message).path("expression")]);
                }
                Ok(schedule)
            }
            _ => Err(issues),
        }
    }

    pub fn timezone(&self) -> Tz {
        self.tz
    }

    /// The first tick strictly after `t`.
    pub fn next_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // Ticks are whole seconds: the first one after `t` is the first after `t`'s second.
        self.cron
            .find_next_occurrence(&whole_second(t).with_timezone(&self.tz), false)
            .ok()
            .map(|d| whole_second(d.with_timezone(&Utc)))
    }

    /// The first tick at or after `t`.
    fn first_from(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        if whole_second(t) != t {
            return self.next_after(t);
        }
        self.cron
            .find_next_occurrence(&t.with_timezone(&self.tz), true)
            .ok()
            .map(|d| whole_second(d.with_timezone(&Utc)))
    }

    fn last_until(&self, t: DateTime<Utc>, inclusive: bool) -> Option<DateTime<Utc>> {
        let t = whole_second(t).with_timezone(&self.tz);
        self.cron.find_previous_occurrence(&t, inclusive).ok().map(|d| whole_second(d.with_timezone(&Utc)))
    }

    /// The next `count` ticks after `from`, in the schedule's zone.
    pub fn preview(&self, from: DateTime<Utc>, count: usize) -> Vec<DateTime<Tz>> {
        let mut times = Vec::with_capacity(count);
        let mut at = from;
        while times.len() < count {
            let Some(next) = self.next_after(at) else { break };
            times.push(next.with_timezone(&self.tz));
            at = next;
        }
        times
    }
}

/// croner keeps the sub-second part of the time it starts from; ticks have none.
fn whole_second(t: DateTime<Utc>) -> DateTime<Utc> {
    t.duration_trunc(Duration::seconds(1)).unwrap_or(t)
}

fn parse_expression(expression: &str) -> Result<Cron, String> {
    if expression.len() > MAX_EXPRESSION_LEN {
        return Err(format!(
            "the expression is longer than {MAX_EXPRESSION_LEN} bytes; cron expressions are short, e.g. `0 9 * * 1-5`"
        ));
    }
    let fields = expression.split_whitespace().count();
    let nickname = expression.trim_start().starts_with('@');
    if !nickname && fields != 5 && fields != 6 {
        return Err(format!(
            "`{expression}` has {fields} fields; write 5 (minute hour day-of-month month day-of-week, e.g. `*/5 * * * *`) \
             or 6 with seconds first (e.g. `*/10 * * * * *`)"
        ));
    }
    // croner 4 refuses `5/15` (write `5-59/15`) unless ranges are sloppy; croner 3 accepted it, and saved
    // triggers use it. Sloppy also accepts `/15` as `*/15`, which croner 3 refused.
    let parser = CronParser::builder().seconds(Seconds::Optional).year(Year::Disallowed).sloppy_ranges(true).build();
    parser.parse(expression).map_err(|e| format!("`{expression}` is not a valid cron expression: {e}"))
}

/// What one claim of a due schedule does.
#[derive(Debug, Clone, PartialEq)]
pub struct FirePlan {
    /// Ticks to fire, oldest first.
    pub fire: Vec<DateTime<Utc>>,
    /// Missed ticks that the catch-up policy (or its bound) leaves unfired.
    pub dropped: bool,
    /// The schedule's next tick after `now`.
    pub next: Option<DateTime<Utc>>,
}

/// The ticks from `due` (the claimed, due tick) up to `now`: those at most `late_grace()`
/// old fire; older ones follow `catch_up`. Never more than `MAX_CATCH_UP` in all.
pub fn plan(schedule: &Schedule, due: DateTime<Utc>, now: DateTime<Utc>, catch_up: CatchUp) -> FirePlan {
    // Ticks are whole seconds; comparing against a whole-second `now` keeps "due" exact.
    let now = whole_second(now);
    let cut = now - late_grace();
    let mut recent = Vec::new();
    let mut at = if due > cut { schedule.first_from(due) } else { schedule.next_after(cut) };
    while let Some(t) = at.filter(|t| *t <= now && recent.len() < MAX_CATCH_UP) {
        recent.push(t);
        at = schedule.next_after(t);
    }
    let mut old = Vec::new();
    let missed = due <= cut;
    if missed {
        let room = match catch_up {
            CatchUp::None => 0,
            CatchUp::Last if recent.is_empty() => 1,
            CatchUp::Last => 0,
            CatchUp::All => MAX_CATCH_UP - recent.len(),
        };
        let mut at = schedule.last_until(cut, true);
        while let Some(t) = at.filter(|t| *t >= due && old.len() < room) {
            old.push(t);
            at = schedule.last_until(t, false);
        }
        old.reverse();
    }
    // Dropped: something missed was left unfired (the oldest missed tick is `due` itself).
    let dropped = missed && old.first() != Some(&due);
    old.extend(recent);
    FirePlan { fire: old, dropped, next: schedule.next_after(now) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_zone_gets_the_zone_it_most_likely_meant() {
        assert_eq!(closest_zone("europe/berlin"), Some("Europe/Berlin"));
        assert_eq!(closest_zone("Berlin"), Some("Europe/Berlin"));
        assert_eq!(closest_zone("new york"), Some("America/New_York"));
        assert_eq!(closest_zone("Mars/Olympus"), None);
        let issues = Schedule::new(&spec("0 9 * * *", "berlin")).err().unwrap();
        assert!(issues[0].message.contains("did you mean `Europe/Berlin`?"), "{issues:?}");
    }

    fn spec(expression: &str, timezone: &str) -> CronSpec {
        CronSpec {
            expression: expression.into(),
            timezone: timezone.into(),
            overlap: Default::default(),
            catch_up: Default::default(),
        }
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn five_and_six_fields_parse_and_others_say_what_to_write() {
        assert!(Schedule::new(&spec("*/5 * * * *", "UTC")).is_ok());
        assert!(Schedule::new(&spec("*/10 * * * * *", "UTC")).is_ok());
        let issues = Schedule::new(&spec("* * *", "UTC")).unwrap_err();
        assert!(issues[0].message.contains("has 3 fields"), "{issues:?}");
        let issues = Schedule::new(&spec("61 * * * *", "Mars/Olympus")).unwrap_err();
        assert_eq!(issues.len(), 2, "both problems at once: {issues:?}");
        assert_eq!(issues[1].path.as_deref(), Some("timezone"));
    }

    #[test]
    fn a_single_number_before_a_step_starts_the_range_as_it_always_did() {
        use chrono::Timelike;
        let s = Schedule::new(&spec("5/20 * * * *", "UTC")).unwrap();
        let minutes: Vec<u32> = s.preview(at("2026-01-01T00:00:00Z"), 4).iter().map(|t| t.minute()).collect();
        assert_eq!(minutes, [5, 25, 45, 5]);
    }

    #[test]
    fn odd_expressions_are_refused_or_accepted_never_a_panic() {
        let odd = [
            "*/0 * * * *",
            "5-1 * * * *",
            "L * * * *",
            "@reboot",
            "@yearly",
            "# * * * *",
            "1,,2 * * * *",
            "- * * * *",
            "0 0 L * *",
            "0 0 * * 5L",
            "0 0 * * 1#6",
            "0 0 15W * *",
            "* * * * * * *",
            "ä * * * *",
            "99999999999999999999 * * * *",
            "",
        ];
        for expression in odd {
            let _ = Schedule::new(&spec(expression, "UTC"));
        }
        let long = "1,".repeat(200) + "2 * * * *";
        assert!(Schedule::new(&spec(&long, "UTC")).unwrap_err()[0].message.contains("longer than"));
        let tz = Schedule::new(&spec("* * * * *", "")).unwrap_err();
        assert_eq!(tz[0].path.as_deref(), Some("timezone"));
    }

    #[test]
    fn ticks_follow_the_zone_wall_clock_across_dst() {
        let s = Schedule::new(&spec("0 9 * * *", "Europe/Berlin")).unwrap();
        // 29 March 2026: Berlin moves from UTC+1 to UTC+2.
        let times = s.preview(at("2026-03-27T12:00:00Z"), 3);
        let utc: Vec<String> = times.iter().map(|t| t.with_timezone(&Utc).to_rfc3339()).collect();
        assert_eq!(utc, ["2026-03-28T08:00:00+00:00", "2026-03-29T07:00:00+00:00", "2026-03-30T07:00:00+00:00"]);
        // 02:30 does not exist that night; the tick still happens once.
        let s = Schedule::new(&spec("30 2 * * *", "Europe/Berlin")).unwrap();
        let times = s.preview(at("2026-03-28T12:00:00Z"), 2);
        assert_eq!(times.len(), 2);
        assert!(
            times[0].with_timezone(&Utc) < at("2026-03-29T12:00:00Z")
                && times[1].with_timezone(&Utc) > at("2026-03-30T00:00:00Z")
        );
    }

    #[test]
    fn on_time_ticks_fire_and_missed_ones_follow_the_policy() {
        let s = Schedule::new(&spec("0 * * * *", "UTC")).unwrap();
        let now = at("2026-01-01T10:00:30Z");
        let on_time = plan(&s, at("2026-01-01T10:00:00Z"), now, CatchUp::None);
        assert_eq!(on_time.fire, [at("2026-01-01T10:00:00Z")]);
        assert!(!on_time.dropped);
        assert_eq!(on_time.next, Some(at("2026-01-01T11:00:00Z")));
        // Down from 05:00 until 10:00:30: five missed ticks and one on time.
        let due = at("2026-01-01T05:00:00Z");
        let none = plan(&s, due, now, CatchUp::None);
        assert_eq!((none.fire.len(), none.dropped), (1, true));
        let last = plan(&s, due, now, CatchUp::Last);
        assert_eq!((last.fire.len(), last.dropped), (1, true), "the on-time tick covers `last`");
        let late = plan(&s, due, at("2026-01-01T10:30:00Z"), CatchUp::Last);
        assert_eq!(late.fire, [at("2026-01-01T10:00:00Z")]);
        let all = plan(&s, due, now, CatchUp::All);
        assert_eq!(all.fire.len(), 6);
        assert_eq!(all.fire[0], due);
        assert!(!all.dropped);
    }

    #[test]
    fn catching_up_is_bounded() {
        let s = Schedule::new(&spec("* * * * * *", "UTC")).unwrap();
        let all = plan(&s, at("2026-01-01T00:00:00Z"), at("2026-01-01T06:00:00Z"), CatchUp::All);
        assert_eq!(all.fire.len(), MAX_CATCH_UP);
        assert!(all.dropped);
        assert!(all.fire.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn ticks_are_whole_seconds_whatever_the_clock_reads() {
        let s = Schedule::new(&spec("*/15 * * * * *", "UTC")).unwrap();
        assert_eq!(s.next_after(at("2026-01-01T10:00:14.700Z")), Some(at("2026-01-01T10:00:15Z")));
        assert_eq!(s.next_after(at("2026-01-01T10:00:15.200Z")), Some(at("2026-01-01T10:00:30Z")));
        let due = plan(&s, at("2026-01-01T10:00:15Z"), at("2026-01-01T10:00:15.900Z"), CatchUp::None);
        assert_eq!(due.fire, [at("2026-01-01T10:00:15Z")]);
    }
}
