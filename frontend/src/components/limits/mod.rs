//! `/limits`: shared limits, the concurrency and rate that nodes naming one (`"limit"`) are
//! held to across every workflow. Everyone sees what each holds now; editors make, change and
//! delete them.

mod limit_form;
mod limit_row;
pub mod limits_page;
