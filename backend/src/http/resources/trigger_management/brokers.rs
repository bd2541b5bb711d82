//! What the trigger routes add for broker triggers (`nats`, `amqp`, `mqtt`): the connection
//! tried at save, the consumers' state in every answer, and a URL's password never shown.

use crate::http::middleware::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::store::TriggerRow;
use crate::triggers::brokers::session::{url_credential, Credential};
use crate::triggers::TriggerSpec;
use chrono::{Duration, Utc};
use serde_json::{Map, Value};
use std::collections::HashMap;
use trellis_model::api::{ConsumerState, Trigger};
use trellis_model::Issue;
use uuid::Uuid;

/// Connects with the settings (a few seconds at most) and opens what they name; a failure is
/// a 422 at `url` saying what failed (the password and secrets left out).
pub(super) async fn check_reachable(state: &AppState, trigger: &TriggerRow, spec: &TriggerSpec) -> ApiResult<()> {
    if spec.broker().is_none() {
        return Ok(());
    }
    let tried =
        crate::triggers::brokers::probe(state.store.clone(), state.engine.clone(), trigger.clone(), spec.clone());
    match tried.await {
        Ok(()) => Ok(()),
        Err(why) => {
            let message = format!("the broker could not be reached with these settings: {why}");
            Err(ApiError::invalid(message.clone(), vec![Issue::new("unreachable", message).path("url")]))
        }
    }
}

/// Fills in each broker trigger's `consumer`: its consumers' last report and the messages it
/// started in the last minute.
pub(super) async fn with_consumers(state: &AppState, mut triggers: Vec<Trigger>) -> ApiResult<Vec<Trigger>> {
    if !triggers.iter().any(|t| t.kind.is_broker()) {
        return Ok(triggers);
    }
    let reports: HashMap<Uuid, crate::store::ConsumerRow> =
        state.store.consumer_reports().await?.into_iter().map(|r| (r.trigger_id, r)).collect();
    let since = Utc::now() - Duration::minutes(1);
    for trigger in triggers.iter_mut().filter(|t| t.kind.is_broker()) {
        let Ok(id) = trigger.id.parse::<Uuid>() else { continue };
        let Some(report) = reports.get(&id) else { continue };
        let (started, _) = state.store.started_since(id, since).await?;
        trigger.consumer = Some(ConsumerState {
            state: report.state.clone(),
            reason: report.reason.clone(),
            since: report.since,
            lag: report.lag,
            started_last_minute: started,
        });
    }
    Ok(triggers)
}

/// The settings with a URL's password replaced by `***` (a `{{ secret.NAME }}` reference is
/// shown as written: it holds no value).
pub(super) fn without_password(mut settings: Map<String, Value>) -> Map<String, Value> {
    if let Some(Value::String(url)) = settings.get_mut("url") {
        if let Ok(mut parsed) = url::Url::parse(url) {
            // A `{{ secret.NAME }}` reference (percent-encoded in the URL) holds no value.
            let masked = match url_credential(&parsed) {
                Some(Credential::Password(p)) if !p.contains("%7B%7B") => parsed.set_password(Some("***")).is_ok(),
                Some(Credential::Token(t)) if !t.contains("%7B%7B") => parsed.set_username("***").is_ok(),
                _ => false,
            };
            if masked {
                *url = parsed.to_string();
            }
        }
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_urls_password_is_never_shown() {
        let shown = |url: &str| {
            let settings = json!({"url": url}).as_object().unwrap().clone();
            without_password(settings)["url"].as_str().unwrap().to_owned()
        };
        assert_eq!(shown("amqp://guest:hunter2@127.0.0.1:5672/%2f"), "amqp://guest:***@127.0.0.1:5672/%2f");
        assert_eq!(shown("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
        assert_eq!(shown("nats://s3cr3t-token@127.0.0.1:4222"), "nats://***@127.0.0.1:4222");
    }
}
