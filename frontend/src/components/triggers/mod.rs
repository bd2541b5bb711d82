//! Webhooks and cron schedules: a workflow's triggers page (`/workflows/{id}/triggers`) and
//! the list of every workflow's (`/triggers`).

pub mod all_triggers_page;
mod new_trigger;
pub mod trigger_row;
pub mod triggers_page;
