//! The dashboard (`/`) and failure triage (`/failures`), over the stats and failures APIs.

pub mod dashboard_page;
mod durations_chart;
mod failure_groups;
pub mod failures_page;
mod now_tiles;
mod throughput_chart;
mod throughput_panel;
