//! `/instances`: every instance, filtered by what the address says, live.

pub mod bulk_bar;
pub mod bulk_buttons;
pub mod bulk_preview;
pub mod content_filter;
pub mod export_links;
pub mod failure_filter;
pub mod filters_bar;
pub mod instance_table;
pub mod instances_page;
pub mod job_progress;
pub mod jobs_page;
pub mod slow_filter;
pub mod status_chips;
pub mod workflow_select;
