//! Saved views: the navigation's menu of them with their live counts (`views_menu`, `view_item`),
//! and saving the instances list's filter as one (`save_view_form`).

pub mod save_view_form;
pub mod view_item;
pub mod views_menu;

use leptos::prelude::*;

/// Moves on whenever a view is saved or deleted, so the menu lists afresh (the layout provides it).
#[derive(Clone, Copy)]
pub struct ViewsChanged(pub RwSignal<u32>);

impl ViewsChanged {
    pub fn provide() {
        provide_context(ViewsChanged(RwSignal::new(0)));
    }

    /// The layout's, read when a component is made (context is gone after an `await`).
    pub fn here() -> Option<ViewsChanged> {
        use_context::<ViewsChanged>()
    }

    /// Tells the menu to list afresh.
    pub fn notify(changed: Option<ViewsChanged>) {
        if let Some(ViewsChanged(n)) = changed {
            n.update(|n| *n += 1);
        }
    }

    pub fn track() {
        if let Some(ViewsChanged(n)) = use_context::<ViewsChanged>() {
            n.track();
        }
    }
}
