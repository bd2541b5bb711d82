//! `/instances`: every instance, filtered by what the address says, live.

pub mod filters_bar;
pub mod instance_table;
pub mod instances_page;
pub mod status_chips;
