//! The one cursor-paged list every paged page uses (workflows, instances, the audit log): the
//! page gives how to fetch a page after a cursor, this keeps the rows (`crate::paged`), reloads,
//! continues with "Load more", and reports failures to the shared error view.

use crate::components::fetch::load_or;
use crate::error::ApiError;
use crate::paged::{Keyed, PagedList, Refresh};
use leptos::prelude::*;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use trellis_model::api::Page;

type Answer<T, X> = Pin<Box<dyn Future<Output = Result<(Page<T>, X), ApiError>>>>;
type FetchPage<T, X> = Rc<dyn Fn(Option<String>) -> Answer<T, X>>;

/// A paged list and how its pages are fetched; copied freely into the page's closures.
pub struct Paged<T: Send + Sync + 'static, X: Send + Sync + 'static = ()> {
    pub list: RwSignal<PagedList<T, X>>,
    fetch: StoredValue<FetchPage<T, X>, LocalStorage>,
}

impl<T: Send + Sync, X: Send + Sync> Clone for Paged<T, X> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Send + Sync, X: Send + Sync> Copy for Paged<T, X> {}

impl<T: Keyed + Clone + Send + Sync + 'static, X: Clone + Send + Sync + 'static> Paged<T, X> {
    /// `fetch` answers the page after a cursor (`None`: the first) with what it carries beside.
    pub fn new<F: Future<Output = Result<(Page<T>, X), ApiError>> + 'static>(
        refresh: Refresh,
        fetch: impl Fn(Option<String>) -> F + 'static,
    ) -> Self {
        let fetch: FetchPage<T, X> = Rc::new(move |cursor| Box::pin(fetch(cursor)));
        Paged { list: RwSignal::new(PagedList::new(refresh)), fetch: StoredValue::new_local(fetch) }
    }

    fn load(self, cursor: Option<String>) {
        let Some(ticket) = self.list.try_update(|l| l.begin(cursor.is_some())) else { return };
        let answer = self.fetch.with_value(|fetch| fetch(cursor));
        let finish = move |answer| {
            self.list.try_update(|l| l.finish(ticket, answer));
        };
        load_or(answer, move |page| finish(Some(page)), move |_| finish(None));
    }

    /// Reads the first page again (a new filter, a refresh).
    pub fn reload(self) {
        self.load(None);
    }

    /// Appends the next page, unless there is none or one is on the way.
    pub fn more(self) {
        if let Some(cursor) = self.list.with_untracked(PagedList::more_cursor) {
            self.load(Some(cursor));
        }
    }

    pub fn items(self) -> Signal<Vec<T>> {
        Signal::derive(move || self.list.with(|l| l.items.clone()))
    }

    pub fn extra(self) -> Signal<Option<X>> {
        Signal::derive(move || self.list.with(|l| l.extra.clone()))
    }

    /// `text` once a load found nothing.
    pub fn empty_text(self, text: impl Fn() -> String + Send + Sync + 'static) -> Signal<Option<String>> {
        Signal::derive(move || self.list.with(PagedList::is_empty).then(&text))
    }

    pub fn loading(self) -> bool {
        self.list.with(|l| l.loading)
    }
}

/// "Load more" under a paged table, while there is more.
#[component]
pub fn LoadMore<T: Keyed + Clone + Send + Sync + 'static, X: Clone + Send + Sync + 'static>(
    paged: Paged<T, X>,
) -> impl IntoView {
    view! {
        <Show when=move || paged.list.with(|l| l.next_cursor.is_some())>
            <button type="button" class="load-more" disabled=move || paged.loading() on:click=move |_| paged.more()>
                "Load more"
            </button>
        </Show>
    }
}
