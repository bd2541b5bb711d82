//! Triggers start instances without a person pressing "start": signed webhooks
//! (`POST /hooks/{id}`), cron schedules fired by every process's fire loop, and messages
//! taken from brokers (NATS JetStream, AMQP, MQTT) by every process's consumers.
//!
//! * [`spec`]: the settings of each kind, validated with what to fix.
//! * [`schedule`]: cron expressions in a time zone, next ticks, catch-up after downtime.
//! * [`signature`]: Standard Webhooks and GitHub signature checks, secrets.
//! * [`fire`]: the loop that claims due schedules and starts their instances exactly once.
//! * [`deliver`]: what a webhook delivery does once its request is read.
//! * [`brokers`]: broker triggers: settings, consumers, and each batch of messages' starts.

pub mod brokers;
pub mod deliver;
pub mod fire;
pub mod schedule;
pub mod signature;
pub mod spec;

pub use spec::{CatchUp, CronSpec, Overlap, Preset, TriggerSpec, WebhookSpec};
