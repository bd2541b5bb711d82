//! The browser tab's title per page: "Instances · Trellis", and for a page about one workflow,
//! once its name is known, "Orders · Designer · Trellis".

use crate::shell::{document_title, workflow_page_title};
use leptos::prelude::*;

/// Names the page in the tab and the history list.
pub fn set_title(page: &str) {
    document().set_title(&document_title(page));
}

/// Names the page by its workflow whenever `name` knows it (the layout's generic `page` until
/// then, and again after a failed load).
pub fn title_by_workflow(page: &'static str, name: impl Fn() -> Option<String> + 'static) {
    Effect::new(move |_| {
        if let Some(name) = name() {
            set_title(&workflow_page_title(&name, page));
        }
    });
}
