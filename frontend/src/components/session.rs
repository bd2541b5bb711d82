//! The signed-in user as every page behind sign-in sees it. The layout reads `GET /auth/me` once
//! when it opens (after each sign-in) and provides it as context; pages ask `use_session()`.

use crate::api;
use crate::error::ApiError;
use crate::run::actions::{may_act, may_edit};
use leptos::prelude::*;
use trellis_model::api::Me;
use trellis_model::Role;

/// Copied freely into the page's state and parts.
#[derive(Clone, Copy)]
pub struct Session {
    me: LocalResource<Result<Me, ApiError>>,
}

impl Session {
    /// Reads who is signed in; a 401 sends the app to sign-in (see `api::on_unauthorized`).
    pub fn read() -> Self {
        Session { me: LocalResource::new(api::me) }
    }

    fn field<T: Send + Sync + 'static>(self, pick: fn(&Me) -> T) -> Signal<Option<T>> {
        Signal::derive(move || self.me.with(|me| me.as_ref().and_then(|r| r.as_ref().ok()).map(pick)))
    }

    /// Whether `GET /auth/me` has answered, either way (a 401 has sent the app to sign-in).
    pub fn settled(self) -> Signal<bool> {
        Signal::derive(move || self.me.with(Option::is_some))
    }

    /// Who is signed in, once known.
    pub fn username(self) -> Signal<Option<String>> {
        self.field(|me| me.username.clone())
    }

    /// Their user id, once known (the owner id of what they save).
    pub fn user_id(self) -> Signal<Option<String>> {
        self.field(|me| me.id.clone())
    }

    /// Their role, once known.
    pub fn role(self) -> Signal<Option<Role>> {
        self.field(|me| me.role)
    }

    /// Whether their role may act on instances (operators and up); false until known.
    pub fn may_act(self) -> Signal<bool> {
        Signal::derive(move || self.role().get().is_some_and(may_act))
    }

    /// Whether their role may change workflows (editors and up); false until known.
    pub fn may_edit(self) -> Signal<bool> {
        Signal::derive(move || self.role().get().is_some_and(may_edit))
    }

    /// Why `GET /auth/me` failed, unless it was the 401 that signs out.
    pub fn error(self) -> Signal<Option<String>> {
        Signal::derive(move || match self.me.get() {
            Some(Err(err)) if !err.is_unauthorized() => Some(err.message()),
            _ => None,
        })
    }
}

/// The session the layout provides.
pub fn use_session() -> Session {
    expect_context::<Session>()
}
