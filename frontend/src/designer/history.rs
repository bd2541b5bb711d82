//! Undo and redo as a stack of snapshots. Every edit records the state before it; edits that
//! carry the same coalescing key one after another (typing into one field) make one step.

#[derive(Debug, Clone)]
pub struct History<T> {
    undo: Vec<T>,
    redo: Vec<T>,
    /// The key of the last recorded edit while it may still absorb the next one.
    open: Option<String>,
    limit: usize,
}

impl<T> Default for History<T> {
    fn default() -> Self {
        History { undo: Vec::new(), redo: Vec::new(), open: None, limit: 200 }
    }
}

impl<T> History<T> {
    /// Records `before` as the state an edit starts from. With a `key` equal to the previous
    /// edit's, the edit joins that step instead. Any new edit clears the redo stack.
    pub fn record(&mut self, before: T, key: Option<&str>) {
        self.redo.clear();
        if key.is_some() && key == self.open.as_deref() {
            return;
        }
        self.open = key.map(str::to_owned);
        self.undo.push(before);
        if self.undo.len() > self.limit {
            self.undo.remove(0);
        }
    }

    /// Ends coalescing, so the next edit is its own step even with the same key.
    pub fn seal(&mut self) {
        self.open = None;
    }

    /// Returns the state to go back to, taking `current` onto the redo stack.
    pub fn undo(&mut self, current: T) -> Option<T> {
        self.open = None;
        let previous = self.undo.pop()?;
        self.redo.push(current);
        Some(previous)
    }

    /// Returns the state undone last, taking `current` back onto the undo stack.
    pub fn redo(&mut self, current: T) -> Option<T> {
        self.open = None;
        let next = self.redo.pop()?;
        self.undo.push(current);
        Some(next)
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_and_redo_walk_the_steps() {
        let mut h = History::default();
        let mut state = 0;
        for next in 1..=3 {
            h.record(state, None);
            state = next;
        }
        state = h.undo(state).unwrap();
        assert_eq!(state, 2);
        state = h.undo(state).unwrap();
        assert_eq!(state, 1);
        state = h.redo(state).unwrap();
        assert_eq!(state, 2);
        state = h.redo(state).unwrap();
        assert_eq!(state, 3);
        assert!(h.redo(state).is_none());
        assert!(h.can_undo() && !h.can_redo());
    }

    #[test]
    fn a_new_edit_drops_what_could_be_redone() {
        let mut h = History::default();
        h.record(0, None);
        let state = h.undo(1).unwrap();
        assert!(h.can_redo());
        h.record(state, None);
        assert!(!h.can_redo());
    }

    #[test]
    fn typing_into_one_field_is_one_step_until_sealed() {
        let mut h = History::default();
        h.record("", Some("a.url"));
        h.record("h", Some("a.url"));
        h.record("ht", Some("a.url"));
        assert_eq!(h.undo("htt"), Some(""));
        assert!(!h.can_undo());
        h.record("x", Some("a.url"));
        h.seal();
        h.record("xy", Some("a.url"));
        assert_eq!(h.undo("xyz"), Some("xy"));
        assert_eq!(h.undo("xy"), Some("x"));
    }

    #[test]
    fn the_stack_is_bounded() {
        let mut h = History { limit: 3, ..History::default() };
        for i in 0..10 {
            h.record(i, None);
        }
        let mut state = 10;
        let mut seen = Vec::new();
        while let Some(s) = h.undo(state) {
            state = s;
            seen.push(s);
        }
        assert_eq!(seen, [9, 8, 7]);
    }
}
