//! The admins' pages: users and API keys, the audit log, retention.

mod api_keys_panel;
pub mod audit_page;
pub mod retention_page;
mod user_row;
pub mod users_page;
