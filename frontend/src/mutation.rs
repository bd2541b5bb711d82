//! The state of one mutation (a request that changes something), kept apart from Leptos so its
//! rules have native tests: a second run while one is on the way is ignored, a run clears the last
//! failure, and a failure leaves the sentence `ApiError::message` gives. The component side,
//! `components/mutation.rs`, holds this state in signals.

use crate::error::ApiError;

/// Whether a mutation is on the way, and what its last failure said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MutationState {
    pub pending: bool,
    pub error: Option<String>,
}

impl MutationState {
    /// Starts a run: false (and nothing changes) when one is already pending.
    pub fn begin(&mut self) -> bool {
        if self.pending {
            return false;
        }
        self.pending = true;
        self.error = None;
        true
    }

    /// Ends a run with its answer: the value on success, `None` (and the failure's sentence kept)
    /// otherwise.
    pub fn finish<T>(&mut self, result: Result<T, ApiError>) -> Option<T> {
        self.pending = false;
        match result {
            Ok(value) => Some(value),
            Err(err) => {
                self.error = Some(err.message());
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport() -> ApiError {
        ApiError::Transport("offline".to_owned())
    }

    #[test]
    fn a_run_is_pending_until_it_finishes() {
        let mut state = MutationState::default();
        assert!(state.begin());
        assert!(state.pending);
        assert_eq!(state.finish(Ok::<_, ApiError>(7)), Some(7));
        assert!(!state.pending);
        assert_eq!(state.error, None);
    }

    #[test]
    fn a_second_run_while_one_is_pending_is_ignored() {
        let mut state = MutationState::default();
        assert!(state.begin());
        assert!(!state.begin());
        assert!(state.pending);
        state.finish(Ok::<_, ApiError>(()));
        assert!(state.begin(), "once the first has finished, a new run may start");
    }

    #[test]
    fn a_failure_keeps_the_sentence_of_the_api_error() {
        let mut state = MutationState::default();
        state.begin();
        assert_eq!(state.finish(Err::<(), _>(transport())), None);
        assert!(!state.pending);
        assert_eq!(state.error, Some(transport().message()));
    }

    #[test]
    fn a_new_run_clears_the_last_failure() {
        let mut state = MutationState { pending: false, error: Some("It failed.".to_owned()) };
        assert!(state.begin());
        assert_eq!(state.error, None);
    }

    #[test]
    fn an_ignored_run_keeps_the_last_failure() {
        let mut state = MutationState { pending: true, error: Some("It failed.".to_owned()) };
        assert!(!state.begin());
        assert_eq!(state.error.as_deref(), Some("It failed."));
    }
}
