//! The admins' pages: users and API keys, the audit log.

mod api_keys_panel;
pub mod audit_page;
mod user_row;
pub mod users_page;
