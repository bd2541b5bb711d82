//! Webhooks, cron schedules and broker triggers: a workflow's triggers page (`/workflows/{id}/triggers`) and
//! the list of every workflow's (`/triggers`).

pub mod all_triggers_page;
mod new_broker_trigger;
mod new_trigger;
pub mod trigger_row;
pub mod triggers_page;
