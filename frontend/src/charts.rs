//! The geometry of the dashboard's charts, kept pure so it is tested natively: a value axis
//! with round ticks, stacked bars per time slot, and labels for the time axis.

use chrono::{DateTime, Utc};
use trellis_model::api::StatsSlot;
use trellis_model::InstanceStatus;

/// The statuses a finished instance can have, bottom to top in a stack.
pub const STACKED: [InstanceStatus; 4] =
    [InstanceStatus::Succeeded, InstanceStatus::Failed, InstanceStatus::TimedOut, InstanceStatus::Canceled];

/// A value axis from 0 to `top`, with `ticks` at round values (1, 2 or 5 times a power of ten).
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub top: f64,
    pub ticks: Vec<f64>,
}

/// An axis that holds `max` with about four ticks; 0 and 1 give an axis up to 1.
pub fn axis(max: f64) -> Axis {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let rough = max / 4.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= rough).unwrap_or(10.0 * magnitude);
    let step = if max <= 4.0 { step.max(1.0).round() } else { step };
    let top = (max / step).ceil() * step;
    let ticks = (0..=((top / step).round() as usize)).map(|i| i as f64 * step).collect();
    Axis { top, ticks }
}

/// One segment of a stacked bar: its status, value, and bottom and top in value units.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub status: InstanceStatus,
    pub value: i64,
    pub from: f64,
    pub to: f64,
}

/// The non-empty segments of a slot's bar, stacked in `STACKED` order.
pub fn stack(slot: &StatsSlot) -> Vec<Segment> {
    let mut at = 0.0;
    let mut segments = Vec::new();
    for status in STACKED {
        let value = slot.counts.get(status);
        if value > 0 {
            segments.push(Segment { status, value, from: at, to: at + value as f64 });
            at += value as f64;
        }
    }
    segments
}

/// The total height of the tallest bar.
pub fn tallest(slots: &[StatsSlot]) -> f64 {
    slots.iter().map(|s| STACKED.iter().map(|st| s.counts.get(*st)).sum::<i64>()).max().unwrap_or(0) as f64
}

/// What hovering a bar says: its time and each status's count.
pub fn describe(slot: &StatsSlot, hourly: bool) -> String {
    let parts: Vec<String> =
        stack(slot).iter().map(|s| format!("{} {}", s.value, s.status.as_str().replace('_', " "))).collect();
    let when = time_label(&slot.start, hourly);
    if parts.is_empty() {
        format!("{when}: nothing finished")
    } else {
        format!("{when}: {}", parts.join(", "))
    }
}

/// `09:17` for a minute, `24 Nov 09:00` for an hour (UTC, like the rest of the app).
pub fn time_label(t: &DateTime<Utc>, hourly: bool) -> String {
    if hourly {
        t.format("%d %b %H:00").to_string()
    } else {
        t.format("%H:%M").to_string()
    }
}

/// The indexes of the slots that get a time label: about `wanted` of them, evenly spaced, the
/// last slot always among them.
pub fn labelled(slots: usize, wanted: usize) -> Vec<usize> {
    if slots == 0 {
        return Vec::new();
    }
    let every = slots.div_ceil(wanted.max(1)).max(1);
    let mut at: Vec<usize> = (0..slots).rev().step_by(every).collect();
    at.reverse();
    at
}

/// A duration for a chart label: `850 ms`, `12.4 s`, `3.5 min`.
pub fn duration_label(ms: f64) -> String {
    if ms < 1_000.0 {
        format!("{ms:.0} ms")
    } else if ms < 60_000.0 {
        format!("{:.1} s", ms / 1_000.0)
    } else {
        format!("{:.1} min", ms / 60_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trellis_model::api::StatusCounts;

    fn slot(succeeded: i64, failed: i64) -> StatsSlot {
        StatsSlot {
            start: DateTime::parse_from_rfc3339("2026-11-24T09:17:00Z").unwrap().with_timezone(&Utc),
            counts: StatusCounts::of([(InstanceStatus::Succeeded, succeeded), (InstanceStatus::Failed, failed)]),
        }
    }

    #[test]
    fn axes_end_on_a_round_value_above_the_tallest_bar() {
        assert_eq!(axis(0.0), Axis { top: 1.0, ticks: vec![0.0, 1.0] });
        assert_eq!(axis(3.0).top, 3.0);
        assert_eq!(axis(7.0), Axis { top: 8.0, ticks: vec![0.0, 2.0, 4.0, 6.0, 8.0] });
        assert_eq!(axis(130.0).top, 150.0);
        assert!(axis(130.0).ticks.contains(&50.0));
    }

    #[test]
    fn bars_stack_in_a_fixed_order_and_describe_themselves() {
        let segments = stack(&slot(3, 1));
        assert_eq!(segments.len(), 2);
        assert_eq!((segments[1].status, segments[1].from, segments[1].to), (InstanceStatus::Failed, 3.0, 4.0));
        assert_eq!(tallest(&[slot(3, 1), slot(1, 0)]), 4.0);
        assert_eq!(describe(&slot(3, 1), false), "09:17: 3 succeeded, 1 failed");
        assert_eq!(describe(&slot(0, 0), true), "24 Nov 09:00: nothing finished");
    }

    #[test]
    fn time_labels_are_spread_and_end_at_the_last_slot() {
        assert_eq!(labelled(60, 6), vec![9, 19, 29, 39, 49, 59]);
        assert_eq!(labelled(3, 6), vec![0, 1, 2]);
        assert!(labelled(0, 6).is_empty());
        assert_eq!(duration_label(850.0), "850 ms");
        assert_eq!(duration_label(12_400.0), "12.4 s");
    }
}
