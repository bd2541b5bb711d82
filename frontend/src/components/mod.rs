//! One component per file, named for what it shows.

pub mod admin;
pub mod app_header;
pub mod copy_button;
pub mod dashboard;
pub mod designer;
pub mod error_alert;
pub mod fetch;
pub mod import_button;
pub mod instance_page;
pub mod instances;
pub mod layout;
pub mod login_page;
pub mod new_workflow_form;
pub mod not_found;
pub mod paged;
pub mod run;
pub mod scene;
pub mod search_box;
pub mod secrets;
pub mod session;
pub mod table_parts;
pub mod title;
pub mod triggers;
pub mod workflow_actions;
pub mod workflow_table;
pub mod workflows_page;
