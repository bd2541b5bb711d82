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

    /// Tells the menu; a no-op outside the layout.
    pub fn bump() {
        if let Some(ViewsChanged(n)) = use_context::<ViewsChanged>() {
            n.update(|n| *n += 1);
        }
    }

    pub fn track() {
        if let Some(ViewsChanged(n)) = use_context::<ViewsChanged>() {
            n.track();
        }
    }
}
