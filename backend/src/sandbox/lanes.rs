//! Who may use which workers, and how long a caller waits for one.
//!
//! Two lanes share the pool by what a request is, never by a guess at how long it takes:
//! **scripts** (a `script` node's run, a script preview) may run for a minute, while
//! **expressions** (every expression and template, compiles for validation, concurrency
//! keys, webhook mappings) end within the sandbox's deadline. Scripts may occupy at most
//! `TRELLIS_SANDBOX_WORKERS` workers at once; the pool keeps [`reserve_for`] more that only
//! expressions use, so a pool full of endless scripts never makes an expression wait behind
//! them (on one core too: the reserve is an extra worker there). Expressions may use every
//! worker, the scripts' share included while it is idle.
//!
//! Every caller takes a permit of the whole pool; a script first takes one of the scripts'
//! share. Both lines are FIFO. Since scripts hold at most their share of the pool's permits,
//! the reserve is only ever held by expressions: an expression waits for other expressions.
//!
//! A caller that has a deadline of its own (an HTTP request) waits in line at most
//! [`waiting_at_most`]'s bound, then is refused as busy ([`Cause::Busy`]). The bound is a
//! task-local set around the request: engine work runs in tasks of its own, so it never
//! inherits one and waits its turn (a node waiting here is not failed).

use super::metrics::SANDBOX;
use super::process::{Cause, Death};
use super::protocol::Request;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Workers kept for expressions only: a quarter of the scripts' share, at least one.
const RESERVE_DIVISOR: usize = 4;

/// What a request is, which decides the workers it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Expressions, templates and compiles: short by construction (the sandbox's deadline).
    Expressions,
    /// Scripts: up to their own time limit (a minute).
    Scripts,
}

impl Lane {
    pub const ALL: [Lane; 2] = [Lane::Expressions, Lane::Scripts];

    /// The lane of `request`: a script's run is a script; compiling one is not (compiling
    /// runs none of it, within the sandbox's deadline).
    pub fn of(request: &Request) -> Lane {
        match request {
            Request::Script { .. } => Lane::Scripts,
            Request::Evaluate { .. } | Request::Check { .. } => Lane::Expressions,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Lane::Expressions => "expressions",
            Lane::Scripts => "scripts",
        }
    }
}

/// Workers kept for expressions beside `scripts` workers that scripts may occupy.
pub fn reserve_for(scripts: usize) -> usize {
    (scripts / RESERVE_DIVISOR).max(1)
}

tokio::task_local! {
    /// How long a caller in this task waits in line for a worker before it is refused.
    static PATIENCE: Duration;
}

/// Runs `work` so that every sandbox request it makes waits in line at most `bound` for a
/// worker, then fails as busy: for callers with a deadline of their own (HTTP requests).
pub async fn waiting_at_most<F: Future>(bound: Duration, work: F) -> F::Output {
    PATIENCE.scope(bound, work).await
}

/// The workers' permits: the whole pool, and the scripts' share of it.
pub struct Lanes {
    all: Arc<Semaphore>,
    scripts: Arc<Semaphore>,
}

/// The right to use one worker; held from the line until the answer (or the worker's end).
pub struct Slot {
    pub lane: Lane,
    _worker: OwnedSemaphorePermit,
    _script: Option<OwnedSemaphorePermit>,
}

impl Lanes {
    /// `scripts` workers scripts may occupy, and the expressions' reserve beside them.
    pub fn new(scripts: usize) -> Lanes {
        let scripts = scripts.max(1);
        Lanes {
            all: Arc::new(Semaphore::new(scripts + reserve_for(scripts))),
            scripts: Arc::new(Semaphore::new(scripts)),
        }
    }

    /// Workers a request of `lane` could have at this moment without waiting in line.
    pub fn free(&self, lane: Lane) -> usize {
        let all = self.all.available_permits();
        match lane {
            Lane::Expressions => all,
            Lane::Scripts => all.min(self.scripts.available_permits()),
        }
    }

    /// Waits in line for a worker `lane` may use: within this task's bound if it has one.
    /// The caller waits here itself, so a caller that gives up leaves the line.
    pub async fn slot(&self, lane: Lane) -> Result<Slot, Death> {
        let queued = Instant::now();
        let slot = match PATIENCE.try_with(|bound| *bound) {
            Ok(bound) => match tokio::time::timeout(bound, self.queue(lane)).await {
                Ok(slot) => slot,
                Err(_) => {
                    SANDBOX.refused_busy(lane);
                    return Err(busy(lane, bound));
                }
            },
            Err(_) => self.queue(lane).await,
        };
        SANDBOX.waited(lane, queued.elapsed());
        slot.ok_or_else(|| Death { cause: Cause::Start, detail: "the sandbox is shut down".into() })
    }

    /// The scripts' share first (so a script never holds a worker's permit while it waits
    /// for its share), then a worker. `None`: the pool is closed.
    async fn queue(&self, lane: Lane) -> Option<Slot> {
        let script = match lane {
            Lane::Scripts => Some(self.scripts.clone().acquire_owned().await.ok()?),
            Lane::Expressions => None,
        };
        let worker = self.all.clone().acquire_owned().await.ok()?;
        Some(Slot { lane, _worker: worker, _script: script })
    }
}

fn busy(lane: Lane, bound: Duration) -> Death {
    let detail = format!(
        "the sandbox is busy: no worker for {} was free within {} ms; try again shortly",
        lane.label(),
        bound.as_millis()
    );
    Death { cause: Cause::Busy, detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scripts_filling_their_share_leave_the_reserve_to_expressions() {
        let lanes = Lanes::new(1);
        let _script = lanes.slot(Lane::Scripts).await.unwrap();
        assert_eq!(lanes.free(Lane::Scripts), 0);
        assert_eq!(lanes.free(Lane::Expressions), 1, "one core still has a worker for expressions");
        let bound = Duration::from_millis(10);
        let waited = waiting_at_most(bound, lanes.slot(Lane::Scripts)).await;
        assert_eq!(waited.err().map(|death| death.cause), Some(Cause::Busy));
        assert!(waiting_at_most(bound, lanes.slot(Lane::Expressions)).await.is_ok());
    }

    #[tokio::test]
    async fn expressions_may_use_the_scripts_share_while_it_is_idle() {
        let lanes = Lanes::new(4);
        let mut held = Vec::new();
        for _ in 0..5 {
            held.push(lanes.slot(Lane::Expressions).await.unwrap());
        }
        assert_eq!((lanes.free(Lane::Expressions), lanes.free(Lane::Scripts)), (0, 0));
        drop(held.pop());
        assert_eq!(lanes.free(Lane::Scripts), 1);
    }

    #[test]
    fn the_reserve_is_a_quarter_of_the_scripts_share_and_at_least_one() {
        assert_eq!([1, 2, 4, 8, 16].map(reserve_for), [1, 1, 1, 2, 4]);
    }
}
