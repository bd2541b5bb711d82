//! A failure message, announced to screen readers as it appears.

use leptos::prelude::*;

#[component]
pub fn ErrorAlert(#[prop(into)] message: Signal<Option<String>>) -> impl IntoView {
    move || message.get().map(|text| view! { <p class="alert" role="alert">{text}</p> })
}
