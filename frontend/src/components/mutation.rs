//! The one way to run a mutation (a request that changes something). Components used to each
//! spawn a task, set their own pending flag, clear and set their own error, and forget one of the
//! three now and then; `Mutation` does it once: a second run while one is pending is ignored, a
//! run clears the last failure, a failure shows `ApiError::message` in the mutation's `error`
//! (put it in an `ErrorAlert`), and `pending` drives a disabled button or a "Saving…". The rules
//! live in `crate::mutation` with native tests. Reads go through `fetch::load` instead.

use crate::error::ApiError;
use crate::mutation::MutationState;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::future::Future;

/// One mutation's pending flag and error, with the way to run it. `Copy`, so handlers capture it.
#[derive(Clone, Copy)]
pub struct Mutation {
    pending: RwSignal<bool>,
    error: RwSignal<Option<String>>,
}

impl Default for Mutation {
    fn default() -> Self {
        Self::new()
    }
}

impl Mutation {
    /// A mutation with its own error.
    pub fn new() -> Self {
        Self::reporting_to(RwSignal::new(None))
    }

    /// A mutation whose failures go to `error`, an error view several mutations of one component
    /// share.
    pub fn reporting_to(error: RwSignal<Option<String>>) -> Self {
        Self { pending: RwSignal::new(false), error }
    }

    /// True while a run is on the way.
    pub fn pending(&self) -> Signal<bool> {
        self.pending.into()
    }

    /// The last failure's sentence, `None` once a new run starts.
    pub fn error(&self) -> Signal<Option<String>> {
        self.error.into()
    }

    /// Shows `message` as the failure (a check made before sending), or clears it with `None`.
    pub fn fail(&self, message: Option<String>) {
        self.error.set(message);
    }

    /// Runs `call` unless a run is pending, and hands its value to `done`; a failure shows in
    /// `error`.
    pub fn run<T: 'static>(
        self,
        call: impl Future<Output = Result<T, ApiError>> + 'static,
        done: impl FnOnce(T) + 'static,
    ) {
        self.run_or(call, done, |_| {});
    }

    /// `run`, with `failed` told of a failure too (to empty a password, to undo a hope).
    pub fn run_or<T: 'static>(
        self,
        call: impl Future<Output = Result<T, ApiError>> + 'static,
        done: impl FnOnce(T) + 'static,
        failed: impl FnOnce(&ApiError) + 'static,
    ) {
        if !self.begin() {
            return;
        }
        spawn_local(async move {
            let result = call.await;
            if let Err(err) = &result {
                failed(err);
            }
            if let Some(value) = self.finish(result) {
                done(value);
            }
        });
    }

    /// Runs `call` unless a run is pending, and hands the whole answer to `done`, for a component
    /// that reports to its page instead of showing an error of its own (`error` stays `None`).
    pub fn settle<T: 'static>(
        self,
        call: impl Future<Output = Result<T, ApiError>> + 'static,
        done: impl FnOnce(Result<T, ApiError>) + 'static,
    ) {
        if !self.begin() {
            return;
        }
        spawn_local(async move {
            let result = call.await;
            self.pending.try_set(false);
            done(result);
        });
    }

    fn begin(&self) -> bool {
        let mut state = MutationState { pending: self.pending.get_untracked(), error: self.error.get_untracked() };
        let started = state.begin();
        if started {
            self.pending.set(state.pending);
            self.error.set(state.error);
        }
        started
    }

    fn finish<T>(&self, result: Result<T, ApiError>) -> Option<T> {
        let mut state = MutationState { pending: true, error: None };
        let value = state.finish(result);
        // The component may be gone by now (a dialog closed, a page left).
        self.pending.try_set(state.pending);
        if state.error.is_some() {
            self.error.try_set(state.error);
        }
        value
    }
}
