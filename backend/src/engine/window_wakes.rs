//! Admission rounds booked for the moment a throttle window opens. Nothing else frees a
//! throttled instance (no instance ends to admit it), so after an admission leaves instances
//! waiting on a full window, the process books a round for when its oldest mark leaves it:
//! one per workflow, the earliest. A process that dies with a booking leaves it to the
//! others' periodic admission sweep (`runner.rs`), and to its own after a restart.

use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Mutex;
use uuid::Uuid;

#[derive(Default)]
pub(super) struct WindowWakes {
    booked: Mutex<HashMap<Uuid, DateTime<Utc>>>,
}

impl WindowWakes {
    /// Books a round for `workflow` at `at`, unless one is booked no later: true if the caller
    /// is to wake then.
    pub(super) fn book(&self, workflow: Uuid, at: DateTime<Utc>) -> bool {
        let mut booked = self.booked.lock().expect("window wakes");
        match booked.get(&workflow) {
            Some(earlier) if *earlier <= at => false,
            _ => {
                booked.insert(workflow, at);
                true
            }
        }
    }

    /// The round booked at `at` is due: forgets it (unless an earlier one replaced it).
    pub(super) fn due(&self, workflow: Uuid, at: DateTime<Utc>) {
        let mut booked = self.booked.lock().expect("window wakes");
        if booked.get(&workflow) == Some(&at) {
            booked.remove(&workflow);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::WindowWakes;
    use chrono::{Duration, Utc};
    use uuid::Uuid;

    #[test]
    fn one_booking_per_workflow_the_earliest() {
        let (wakes, workflow, now) = (WindowWakes::default(), Uuid::now_v7(), Utc::now());
        assert!(wakes.book(workflow, now + Duration::seconds(2)));
        assert!(!wakes.book(workflow, now + Duration::seconds(3)), "a later one is covered");
        assert!(wakes.book(workflow, now + Duration::seconds(1)), "an earlier one is booked too");
        // The later wake, when due, leaves the earlier booking alone.
        wakes.due(workflow, now + Duration::seconds(2));
        assert!(!wakes.book(workflow, now + Duration::seconds(1)));
        wakes.due(workflow, now + Duration::seconds(1));
        assert!(wakes.book(workflow, now + Duration::seconds(5)), "nothing booked any more");
        assert!(wakes.book(Uuid::now_v7(), now), "another workflow's are its own");
    }
}
