//! The admins' pages: users and API keys.

mod api_keys_panel;
mod user_row;
pub mod users_page;
