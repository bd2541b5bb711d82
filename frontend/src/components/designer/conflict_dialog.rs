//! Shown when a save found that someone else changed the draft: reload theirs, or overwrite it.

use crate::components::designer::state::Designer;
use leptos::prelude::*;
use leptos::task::spawn_local;

#[component]
pub fn ConflictDialog() -> impl IntoView {
    let d = expect_context::<Designer>();
    let overwrite = move |_| {
        spawn_local(async move {
            d.save(true).await;
        })
    };
    view! {
        <Show when=move || d.conflict.get()>
            <div class="dialog-backdrop">
                <div class="dialog" role="alertdialog" aria-modal="true" aria-labelledby="conflict-title">
                    <h2 id="conflict-title">"Someone else changed this workflow"</h2>
                    <p>"The draft was saved by someone else after you opened it. Reload to see their version (your changes are lost), or overwrite it with yours."</p>
                    <div class="dialog-buttons">
                        <button type="button" on:click=move |_| d.load()>"Reload theirs"</button>
                        <button type="button" class="danger" on:click=overwrite>"Overwrite with mine"</button>
                        <button type="button" on:click=move |_| d.conflict.set(false)>"Cancel"</button>
                    </div>
                </div>
            </div>
        </Show>
    }
}
