//! The browser tab's title per page: "Instances · Trellis".

/// Names the page in the tab and the history list.
pub fn set_title(page: &str) {
    leptos::prelude::document().set_title(&crate::shell::document_title(page));
}
