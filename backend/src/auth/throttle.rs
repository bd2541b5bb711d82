//! Failed sign-ins, counted per key (a username, a client address), with exponential
//! backoff: after `threshold` failures the key is locked for `base`, doubling with each
//! further failure up to `max`. While locked, every sign-in for the key is refused, the
//! right password included, so guessing gains nothing from speed.
//!
//! The state is in memory, per process: processes sharing a database each keep their own
//! count (an attacker spreading guesses over N processes gets N times the attempts). Memory
//! is bounded: at most `max_keys` keys are tracked, and a key is forgotten once it is
//! unlocked and has not failed for `forget_after`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Failures allowed before the first lock.
    pub threshold: u32,
    /// The first lock's length; each further failure doubles it.
    pub base: Duration,
    pub max: Duration,
    /// An unlocked key without failures for this long starts again from zero.
    pub forget_after: Duration,
    pub max_keys: usize,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    last_failure: Instant,
    locked_until: Option<Instant>,
}

impl Entry {
    fn locked_at(&self, now: Instant) -> Option<Duration> {
        self.locked_until.and_then(|until| until.checked_duration_since(now)).filter(|d| !d.is_zero())
    }

    fn stale(&self, now: Instant, forget_after: Duration) -> bool {
        self.locked_at(now).is_none() && now.saturating_duration_since(self.last_failure) >= forget_after
    }
}

pub struct Throttle {
    policy: Policy,
    entries: Mutex<HashMap<Key, Entry>>,
}

impl Throttle {
    pub fn new(policy: Policy) -> Self {
        Throttle { policy, entries: Mutex::new(HashMap::new()) }
    }

    /// How long `key` stays locked, if it is.
    pub fn locked(&self, key: &str, now: Instant) -> Option<Duration> {
        self.lock().get(&key_of(key)).and_then(|e| e.locked_at(now))
    }

    /// Counts a failure of `key`; returns how long it is now locked, if it is.
    pub fn fail(&self, key: &str, now: Instant) -> Option<Duration> {
        let key = key_of(key);
        let mut entries = self.lock();
        if !entries.contains_key(&key) && entries.len() >= self.policy.max_keys {
            make_room(&mut entries, now, &self.policy);
        }
        let entry = entries.entry(key).or_insert(Entry { failures: 0, last_failure: now, locked_until: None });
        if entry.stale(now, self.policy.forget_after) {
            entry.failures = 0;
        }
        entry.failures = entry.failures.saturating_add(1);
        entry.last_failure = now;
        if entry.failures >= self.policy.threshold {
            let lock = backoff(&self.policy, entry.failures - self.policy.threshold);
            entry.locked_until = Some(now + lock);
            return Some(lock);
        }
        None
    }

    /// Forgets `key`'s failures (after a successful sign-in).
    pub fn clear(&self, key: &str) {
        self.lock().remove(&key_of(key));
    }

    pub fn tracked(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `base × 2^extra`, at most `max`.
fn backoff(policy: &Policy, extra: u32) -> Duration {
    let factor = 1u32.checked_shl(extra.min(31)).unwrap_or(u32::MAX);
    policy.base.saturating_mul(factor).min(policy.max)
}

/// Drops the keys already forgotten; if none were, one key: the unlocked one with the fewest
/// failures (the oldest of those), or if every key is locked, the one whose lock ends first.
/// Spraying new keys (one failure each) therefore evicts other spray before it touches a
/// key with a real count or a lock: it cannot reset a guessed-at account.
fn make_room(entries: &mut HashMap<Key, Entry>, now: Instant, policy: &Policy) {
    entries.retain(|_, e| !e.stale(now, policy.forget_after));
    if entries.len() < policy.max_keys {
        return;
    }
    let unlocked = entries
        .iter()
        .filter(|(_, e)| e.locked_at(now).is_none())
        .min_by_key(|(_, e)| (e.failures, e.last_failure))
        .map(|(k, _)| *k);
    let victim = unlocked.or_else(|| entries.iter().min_by_key(|(_, e)| e.locked_until).map(|(k, _)| *k));
    if let Some(key) = victim {
        entries.remove(&key);
    }
}

/// A key as stored: its SHA-256, so what a caller sends (a username of any length) costs
/// the same few bytes to track.
type Key = [u8; 32];

fn key_of(key: &str) -> Key {
    crate::digest::sha256(key.as_bytes())
}

/// Sign-in's two throttles. A username locks after a few failures; an address after more
/// (many people may share one, behind NAT), so one guesser cannot lock out an office.
pub struct SignInThrottle {
    pub users: Throttle,
    pub addresses: Throttle,
}

/// Tracked keys per throttle: about 80 bytes each (a digest and its counts), ~2 MB at most.
const MAX_KEYS: usize = 20_000;

impl Default for SignInThrottle {
    fn default() -> Self {
        let policy = |threshold| Policy {
            threshold,
            base: Duration::from_secs(30),
            max: Duration::from_secs(15 * 60),
            forget_after: Duration::from_secs(15 * 60),
            max_keys: MAX_KEYS,
        };
        SignInThrottle { users: Throttle::new(policy(5)), addresses: Throttle::new(policy(20)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            threshold: 3,
            base: Duration::from_secs(10),
            max: Duration::from_secs(60),
            forget_after: Duration::from_secs(300),
            max_keys: 4,
        }
    }

    #[test]
    fn a_key_locks_at_the_threshold_and_the_lock_doubles_up_to_the_maximum() {
        let t = Throttle::new(policy());
        let now = Instant::now();
        assert_eq!(t.fail("ada", now), None);
        assert_eq!(t.fail("ada", now), None);
        assert_eq!(t.fail("ada", now), Some(Duration::from_secs(10)));
        assert_eq!(t.locked("ada", now + Duration::from_secs(5)), Some(Duration::from_secs(5)));
        assert_eq!(t.locked("ada", now + Duration::from_secs(10)), None);
        assert_eq!(t.fail("ada", now), Some(Duration::from_secs(20)));
        assert_eq!(t.fail("ada", now), Some(Duration::from_secs(40)));
        assert_eq!(t.fail("ada", now), Some(Duration::from_secs(60)));
        for _ in 0..100 {
            t.fail("ada", now);
        }
        assert_eq!(t.locked("ada", now), Some(Duration::from_secs(60)));
        assert_eq!(t.locked("bob", now), None);
    }

    #[test]
    fn old_failures_are_forgotten_and_success_clears_a_key() {
        let t = Throttle::new(policy());
        let now = Instant::now();
        t.fail("ada", now);
        t.fail("ada", now);
        assert_eq!(t.fail("ada", now + Duration::from_secs(301)), None, "a fresh count");
        t.fail("bob", now);
        t.clear("bob");
        assert_eq!(t.fail("bob", now), None);
        assert_eq!(t.fail("bob", now), None);
    }

    #[test]
    fn tracked_keys_are_capped_and_locked_keys_are_kept_longest() {
        let t = Throttle::new(policy());
        let now = Instant::now();
        for _ in 0..3 {
            t.fail("locked", now);
        }
        for i in 0..1_000 {
            t.fail(&format!("spray-{i}"), now);
        }
        assert!(t.tracked() <= 4);
        assert!(t.locked("locked", now).is_some(), "spraying other keys does not unlock a key");
    }

    #[test]
    fn spraying_new_keys_does_not_reset_a_key_short_of_its_lock() {
        let t = Throttle::new(policy());
        let now = Instant::now();
        t.fail("admin", now);
        t.fail("admin", now);
        for i in 0..1_000 {
            t.fail(&format!("spray-{i}"), now + Duration::from_millis(i));
        }
        assert_eq!(t.fail("admin", now), Some(Duration::from_secs(10)), "admin's two failures were kept");
    }

    #[test]
    fn a_key_of_any_length_is_tracked_by_its_digest() {
        let t = Throttle::new(policy());
        let long = "x".repeat(1 << 20);
        t.fail(&long, Instant::now());
        assert_eq!(t.tracked(), 1);
        assert_eq!(size_of::<Key>(), 32);
    }
}
