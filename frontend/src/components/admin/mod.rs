//! The admins' pages: users and API keys, the audit log, retention, the cluster.

mod api_key_form;
mod api_keys_panel;
mod api_keys_table;
pub mod audit_page;
pub mod cluster_page;
mod mapping_preview;
mod policy_form;
pub mod retention_page;
mod role_select;
mod user_row;
pub mod users_page;
