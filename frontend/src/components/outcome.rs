//! What a page's last action did, or why the API refused it: a page keeps a notice and an error,
//! and one action's outcome shows in one of them, clearing the other.

use leptos::prelude::*;

/// A page's notice and error, both `None` until an action ends.
#[derive(Clone, Copy)]
pub struct Outcome {
    pub notice: RwSignal<Option<String>>,
    pub error: RwSignal<Option<String>>,
}

impl Outcome {
    pub fn new() -> Self {
        Outcome { notice: RwSignal::new(None), error: RwSignal::new(None) }
    }

    /// Shows what an action said: its notice, or why it failed.
    pub fn show(self, said: Result<String, String>) {
        let (shown, cleared) = if said.is_ok() { (self.notice, self.error) } else { (self.error, self.notice) };
        cleared.set(None);
        shown.set(Some(said.unwrap_or_else(|why| why)));
    }
}
