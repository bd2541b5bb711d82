//! `/secrets`: the names workflows reference as `{{ secret.NAME }}`. Admins add, rotate and
//! delete; editors see the names to reference them. No value is ever shown.

mod secret_form;
mod secret_row;
pub mod secrets_page;
