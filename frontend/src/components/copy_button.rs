//! A button that copies a text to the clipboard and says, for a moment, whether it did: for
//! node outputs here, and for secrets shown once (API keys, webhook secrets).

use leptos::prelude::*;
use leptos::task::spawn_local;
use std::time::Duration;
use wasm_bindgen_futures::JsFuture;

/// How long "Copied" (or the reason it failed) shows before the label comes back.
const SHOWN_FOR: Duration = Duration::from_millis(1_500);

#[component]
pub fn CopyButton(
    /// The text copied when clicked.
    #[prop(into)]
    text: Signal<String>,
    /// What the button copies, for screen readers ("Copy output").
    #[prop(into)]
    label: String,
) -> impl IntoView {
    let said = RwSignal::new(None::<String>);
    let copy = move |_| {
        let text = text.get_untracked();
        spawn_local(async move {
            let outcome = write(&text).await;
            said.set(Some(outcome.map(|()| "Copied".to_owned()).unwrap_or_else(|why| why)));
            set_timeout(move || said.set(None), SHOWN_FOR);
        });
    };
    view! {
        <button type="button" class="copy" aria-label=label data-testid="copy-button" on:click=copy>
            {move || said.get().unwrap_or_else(|| "Copy".to_owned())}
        </button>
        <span class="visually-hidden" role="status">{move || said.get()}</span>
    }
}

/// Writes `text` to the clipboard; the error says why the browser refused (an insecure page,
/// a denied permission).
async fn write(text: &str) -> Result<(), String> {
    let window = web_sys::window().ok_or("No window to copy from")?;
    let promise = window.navigator().clipboard().write_text(text);
    JsFuture::from(promise).await.map(|_| ()).map_err(|e| {
        let reason = js_sys::Error::from(e).message();
        format!("Not copied: {}", String::from(reason))
    })
}
