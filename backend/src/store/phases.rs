//! Where committing transitions spends its time, phase by phase, summed over this process's
//! batches: `/metrics` exposes the sums, and the benchmark divides them by the transitions to
//! publish a breakdown (BENCHMARKS.md). Process-wide, like the metrics it feeds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The phases of one batch, in the order it goes through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for this process's write turn (SQLite), a pooled connection and `BEGIN`.
    Begin,
    /// Locking and reading the batch's instances and their nodes.
    Lock,
    /// Consuming the fenced work items.
    Fence,
    /// The engine's decisions (in memory, the locks held).
    Decide,
    /// Instance rows: only a retry's restart or a failure's triage is sent here; the rest goes
    /// with the batch's one write (`History`).
    Instances,
    /// Node rows and work items: gathered, sent with `History`.
    Rows,
    /// History entries and their announcement to other processes: the batch's one write
    /// (`queries/sink.rs`) with every other write in it. A batch written from remembered
    /// snapshots (`queries/remembered.rs`) is all `Decide` and `History`: no lock, no fence
    /// read, and on Postgres no `BEGIN` or `COMMIT`.
    History,
    /// `COMMIT`: the durable write.
    Commit,
}

impl Phase {
    pub const ALL: [Phase; 8] = [
        Phase::Begin,
        Phase::Lock,
        Phase::Fence,
        Phase::Decide,
        Phase::Instances,
        Phase::Rows,
        Phase::History,
        Phase::Commit,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Begin => "begin",
            Phase::Lock => "lock",
            Phase::Fence => "fence",
            Phase::Decide => "decide",
            Phase::Instances => "instances",
            Phase::Rows => "rows",
            Phase::History => "history",
            Phase::Commit => "commit",
        }
    }
}

/// Sums of nanoseconds per phase, and how many batches and transitions they cover; and the
/// statements and transactions the engine sent: transition batches, admissions and starts
/// (their writes), claims, and the instance reads before attempts — not the API's reads.
pub struct PhaseClock {
    nanos: [AtomicU64; 8],
    batches: AtomicU64,
    transitions: AtomicU64,
    statements: AtomicU64,
    transactions: AtomicU64,
    /// Batches written from remembered snapshots, and those tried so but refused (`snapshots.rs`).
    remembered: [AtomicU64; 2],
    /// Start transactions of `start_batch.rs` (one or more starts each), and the starts in them.
    start_batches: [AtomicU64; 2],
    /// Results of attempts run ahead of their dispatch's commit: kept, dropped (`engine/ahead.rs`).
    ran_ahead: [AtomicU64; 2],
}

pub static PHASES: PhaseClock = PhaseClock {
    nanos: [const { AtomicU64::new(0) }; 8],
    batches: AtomicU64::new(0),
    transitions: AtomicU64::new(0),
    statements: AtomicU64::new(0),
    transactions: AtomicU64::new(0),
    remembered: [const { AtomicU64::new(0) }; 2],
    start_batches: [const { AtomicU64::new(0) }; 2],
    ran_ahead: [const { AtomicU64::new(0) }; 2],
};

impl PhaseClock {
    /// Seconds spent in `phase` so far.
    pub fn seconds(&self, phase: Phase) -> f64 {
        self.nanos[phase as usize].load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Batches committed and the transitions (steps) they held.
    pub fn counts(&self) -> (u64, u64) {
        (self.batches.load(Ordering::Relaxed), self.transitions.load(Ordering::Relaxed))
    }

    /// A committed batch of `transitions` steps.
    pub fn committed(&self, transitions: usize) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.transitions.fetch_add(transitions as u64, Ordering::Relaxed);
    }

    /// Statements and transactions the engine sent so far.
    pub fn sent(&self) -> (u64, u64) {
        (self.statements.load(Ordering::Relaxed), self.transactions.load(Ordering::Relaxed))
    }

    /// A batch tried on remembered snapshots: written, or refused (then locked and written).
    pub fn remembered(&self, written: bool) {
        self.remembered[usize::from(!written)].fetch_add(1, Ordering::Relaxed);
    }

    /// Batches written from remembered snapshots, and those refused.
    pub fn remembered_counts(&self) -> (u64, u64) {
        (self.remembered[0].load(Ordering::Relaxed), self.remembered[1].load(Ordering::Relaxed))
    }

    /// A transaction wrote `starts` starts together (`queries/start_batch.rs`).
    pub fn started_together(&self, starts: usize) {
        self.start_batches[0].fetch_add(1, Ordering::Relaxed);
        self.start_batches[1].fetch_add(starts as u64, Ordering::Relaxed);
    }

    /// Start transactions written together, and the starts they held.
    pub fn start_batch_counts(&self) -> (u64, u64) {
        (self.start_batches[0].load(Ordering::Relaxed), self.start_batches[1].load(Ordering::Relaxed))
    }

    /// A result run ahead of its dispatch's commit was committed with it, or dropped.
    pub fn ran_ahead(&self, kept: bool) {
        self.ran_ahead[usize::from(!kept)].fetch_add(1, Ordering::Relaxed);
    }

    /// Results run ahead kept, and dropped.
    pub fn ran_ahead_counts(&self) -> (u64, u64) {
        (self.ran_ahead[0].load(Ordering::Relaxed), self.ran_ahead[1].load(Ordering::Relaxed))
    }

    /// One statement sent inside an engine transaction.
    pub fn statement(&self) {
        self.statements.fetch_add(1, Ordering::Relaxed);
    }

    /// An engine transaction committed: its `BEGIN` and `COMMIT` (its other statements are
    /// counted as they go).
    pub fn transaction(&self) {
        self.statements.fetch_add(2, Ordering::Relaxed);
        self.transactions.fetch_add(1, Ordering::Relaxed);
    }

    /// A transaction of `statements` round trips sent outside a batch (a claim, a read).
    pub fn autocommit(&self, statements: u64) {
        self.statements.fetch_add(statements, Ordering::Relaxed);
        self.transactions.fetch_add(1, Ordering::Relaxed);
    }
}

/// Times consecutive phases of one batch.
pub struct Lap(Instant);

impl Lap {
    pub fn start() -> Lap {
        Lap(Instant::now())
    }

    /// Charges the time since the last lap to `phase`.
    pub fn lap(&mut self, phase: Phase) {
        let now = Instant::now();
        let nanos = now.duration_since(self.0).as_nanos() as u64;
        PHASES.nanos[phase as usize].fetch_add(nanos, Ordering::Relaxed);
        self.0 = now;
    }
}
