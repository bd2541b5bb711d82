//! `/alerts`: rules that post a signed webhook when an instance fails, times out or runs slow,
//! or a queue grows; each with a test button and its delivery log. Editors and admins only.

mod alert_form;
mod alert_row;
pub mod alerts_page;
mod delivery_log;
