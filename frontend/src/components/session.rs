//! The signed-in user as every page behind sign-in sees it: who it is, and the way back to the
//! sign-in page once `GET /auth/me` or any call the page notes is answered 401.

use crate::api;
use crate::error::ApiError;
use leptos::prelude::*;
use leptos_router::hooks::use_navigate;
use leptos_router::NavigateOptions;
use trellis_model::api::Me;

/// Copied freely into the page's state and parts.
#[derive(Clone, Copy)]
pub struct Session {
    me: LocalResource<Result<Me, ApiError>>,
    /// Set by any 401; one effect turns it into the redirect.
    signed_out: RwSignal<bool>,
}

/// The page's session: reads who is signed in and sends the page to sign-in on a 401.
pub fn use_session() -> Session {
    let session = Session { me: LocalResource::new(api::me), signed_out: RwSignal::new(false) };
    Effect::new(move |_| {
        if let Some(Err(err)) = session.me.get() {
            session.note(&err);
        }
    });
    let navigate = use_navigate();
    Effect::new(move |_| {
        if session.signed_out.get() {
            to_sign_in(&navigate);
        }
    });
    session
}

/// Opens the sign-in page in place of this one (Back does not return to a page that needs a session).
pub fn to_sign_in(navigate: &impl Fn(&str, NavigateOptions)) {
    navigate("/login", NavigateOptions { replace: true, ..Default::default() });
}

impl Session {
    /// Notes a failed call: a 401 means the session is gone.
    pub fn note(self, err: &ApiError) {
        if err.is_unauthorized() {
            self.signed_out.set(true);
        }
    }

    /// Who is signed in, once known.
    pub fn username(self) -> Signal<Option<String>> {
        Signal::derive(move || self.me.get().and_then(Result::ok).map(|me| me.username))
    }

    /// Why `GET /auth/me` failed, unless it was the 401 that signs out.
    pub fn error(self) -> Signal<Option<String>> {
        Signal::derive(move || match self.me.get() {
            Some(Err(err)) if !err.is_unauthorized() => Some(err.message()),
            _ => None,
        })
    }
}
