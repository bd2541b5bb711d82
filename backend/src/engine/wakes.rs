//! Who waits for work to appear, and the nudges that end their wait: the claim loop
//! (`runner.rs`), task workers' long polls (`tasks.rs`) and maps waiting on their items'
//! children (`map/`). Step 5 of a commit (`commit/`) and the admission of queued instances
//! nudge them; nothing here calls anything.

use tokio::sync::Notify;

#[derive(Default)]
pub(super) struct Wakes {
    /// New work due at once that this process did not lease to itself: claim now.
    pub claims: Notify,
    /// A task was written: task workers' long polls look now.
    pub tasks: Notify,
    /// A child of some `map` item ended (its `child_done` item was consumed): the maps
    /// waiting on children look now rather than at their next poll.
    pub map_children: Notify,
    /// A start opened or joined a `debounce` burst: the debounce loop looks at when it is due.
    pub debounces: Notify,
}
