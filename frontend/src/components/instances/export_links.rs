//! Export of the current view: the same filters as JSON lines or CSV, as plain download links
//! (the browser streams the file; the session cookie authenticates).

use crate::instance_filter::InstanceFilter;
use leptos::prelude::*;

#[component]
pub fn ExportLinks(filter: Signal<InstanceFilter>) -> impl IntoView {
    view! {
        <span class="export-links" role="group" aria-label="Export these instances">
            "Export: "
            <a href=move || filter.with(|f| f.export_url("jsonl")) download="" data-testid="export-jsonl">"JSONL"</a>
            " "
            <a href=move || filter.with(|f| f.export_url("csv")) download="" data-testid="export-csv">"CSV"</a>
        </span>
    }
}
