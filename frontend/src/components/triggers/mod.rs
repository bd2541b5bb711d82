//! A workflow's triggers page (`/workflows/{id}/triggers`): webhooks and cron schedules.

mod new_trigger;
mod trigger_row;
pub mod triggers_page;
