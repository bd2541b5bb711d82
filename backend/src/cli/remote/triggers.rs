//! `trellis trigger …`: list, create, rotate a webhook's secret, and the delivery log.

use super::api::Api;
use super::failure::{CliError, CliResult, Exit};
use super::input::json_argument;
use super::render::{self, Output};
use super::{workflows, Target};
use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{json, Value};
use trellis_model::api::{CreatedTrigger, Delivery, Items, Page, RotatedSecret, Trigger};

#[derive(Debug, Args)]
pub struct TriggerArgs {
    #[command(subcommand)]
    pub command: TriggerCommand,
}

#[derive(Debug, Subcommand)]
pub enum TriggerCommand {
    /// List triggers: every workflow's, or one workflow's.
    List {
        /// Only this workflow's (id or exact name)
        #[arg(long, short = 'w')]
        workflow: Option<String>,
    },
    /// Create a webhook (prints its URL and secret, shown this once), a cron schedule, or a
    /// broker trigger (NATS JetStream, AMQP, MQTT).
    #[command(after_help = "Examples:\n  trellis trigger create deploy --webhook\n  \
                            trellis trigger create nightly-report --cron '0 2 * * *' --timezone Europe/Berlin\n  \
                            trellis trigger create orders --nats nats://127.0.0.1:4222 --stream ORDERS --subject orders.new\n  \
                            trellis trigger create orders --amqp 'amqp://guest:{{ secret.AMQP_PASSWORD }}@mq:5672/%2f' --queue orders\n  \
                            trellis trigger create sensors --mqtt mqtt://127.0.0.1:1883 --topic 'sensors/+/reading' --dedupe message.body.id")]
    Create(Box<CreateArgs>),
    /// Give a webhook a new secret; the old one keeps verifying for a grace period.
    RotateSecret {
        /// The webhook trigger's id
        id: String,
        /// How long the old secret keeps working, in milliseconds (default a day, at most 30 days)
        #[arg(long)]
        grace_ms: Option<u64>,
    },
    /// A trigger's delivery log (webhook deliveries, cron ticks), newest first.
    Deliveries {
        /// The trigger's id
        id: String,
        /// At most this many
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("kind").required(true).args(["webhook", "cron", "nats", "amqp", "mqtt"])))]
pub struct CreateArgs {
    /// The workflow's id or exact name
    pub workflow: String,
    /// A webhook: deliveries signed per Standard Webhooks start instances
    #[arg(long)]
    pub webhook: bool,
    /// A schedule: 5 fields (minute first) or 6 (second first)
    #[arg(long, value_name = "EXPRESSION")]
    pub cron: Option<String>,
    /// The schedule's IANA time zone, e.g. Europe/Berlin [default: UTC]
    #[arg(long, requires = "cron")]
    pub timezone: Option<String>,
    /// A NATS JetStream trigger: the server's URL (`nats://host:4222`; secrets as `{{ secret.NAME }}`)
    #[arg(long, value_name = "URL", requires_all = ["stream", "subject"])]
    pub nats: Option<String>,
    /// NATS: the stream (made if missing)
    #[arg(long, requires = "nats")]
    pub stream: Option<String>,
    /// NATS: the subject
    #[arg(long, requires = "nats")]
    pub subject: Option<String>,
    /// NATS: the durable consumer's name [default: trellis-<trigger id>]
    #[arg(long, requires = "nats")]
    pub consumer: Option<String>,
    /// An AMQP (RabbitMQ) trigger: the broker's URL (`amqp://user:password@host:5672/%2f`)
    #[arg(long, value_name = "URL", requires = "queue")]
    pub amqp: Option<String>,
    /// AMQP: the queue (declared durable if missing)
    #[arg(long, requires = "amqp")]
    pub queue: Option<String>,
    /// An MQTT trigger: the broker's URL (`mqtt://host:1883`, `mqtts://` for TLS)
    #[arg(long, value_name = "URL", requires = "topic")]
    pub mqtt: Option<String>,
    /// MQTT: the topic filter (`+` and `#` allowed)
    #[arg(long, requires = "mqtt")]
    pub topic: Option<String>,
    /// Brokers: an expression over `message` giving the instance's input
    #[arg(long, value_name = "EXPRESSION")]
    pub input: Option<String>,
    /// Brokers: an expression over `message` giving the key a repeated message is known by
    /// [default: the broker's message id]
    #[arg(long, value_name = "EXPRESSION")]
    pub dedupe: Option<String>,
    /// Brokers: stop taking messages while the workflow has more queued instances than this [default: 1000]
    #[arg(long)]
    pub max_queued: Option<u32>,
    /// A name shown in lists
    #[arg(long)]
    pub name: Option<String>,
    /// Create it paused
    #[arg(long)]
    pub paused: bool,
    /// More of the kind's settings as a JSON object (e.g. `{"rate_limit_per_minute": 60}`)
    #[arg(long, value_name = "JSON")]
    pub settings: Option<String>,
}

pub async fn run(target: &Target, args: TriggerArgs) -> CliResult<Exit> {
    let api = target.connect()?;
    let output = target.output;
    match args.command {
        TriggerCommand::List { workflow } => list(&api, output, workflow).await,
        TriggerCommand::Create(create_args) => create(&api, output, *create_args).await,
        TriggerCommand::RotateSecret { id, grace_ms } => {
            let request = api
                .request(Method::POST, &format!("/triggers/{id}/rotate-secret"))
                .json(&json!({"grace_ms": grace_ms}));
            let rotated: RotatedSecret = api.json(request).await?;
            let fields = [
                ("id", rotated.id.clone()),
                ("secret", rotated.secret.clone()),
                ("old secret valid until", render::time(Some(rotated.previous_secret_valid_until))),
            ];
            render::one(output, &rotated, &fields);
            Ok(Exit::Success)
        }
        TriggerCommand::Deliveries { id, limit } => {
            let page: Page<Delivery> =
                api.get(&format!("/triggers/{id}/deliveries"), &[("limit", limit.to_string())]).await?;
            render::list(output, &page.items, &["received", "outcome", "status", "instance", "reason"], |d| {
                vec![
                    render::time(Some(d.received_at)),
                    d.outcome.to_string(),
                    d.status.map_or_else(|| "-".to_owned(), |s| s.to_string()),
                    render::text(d.instance_id.as_deref(), 40),
                    render::text(d.reason.as_deref(), 60),
                ]
            });
            Ok(Exit::Success)
        }
    }
}

async fn list(api: &Api, output: Output, workflow: Option<String>) -> CliResult<Exit> {
    let path = match workflow {
        Some(workflow) => format!("/workflows/{}/triggers", workflows::resolve(api, &workflow).await?.id),
        None => "/triggers".to_owned(),
    };
    let triggers: Items<Trigger> = api.get(&path, &[]).await?;
    let columns = ["id", "kind", "workflow", "name", "paused", "schedule, url or source", "state"];
    render::list(output, &triggers.items, &columns, |t| {
        // A broker's `url` setting reads into the same field as a webhook's.
        let what = match (t.settings.get("expression"), &t.url) {
            (Some(Value::String(expression)), _) => expression.clone(),
            (_, Some(url)) if t.kind.is_broker() => {
                let source = ["stream", "queue", "topic"].iter().find_map(|k| t.settings.get(*k)?.as_str());
                format!("{url} {}", source.unwrap_or_default())
            }
            (_, Some(url)) => url.clone(),
            _ => "-".to_owned(),
        };
        let state = t.consumer.as_ref().map_or_else(
            || "-".to_owned(),
            |c| c.reason.as_ref().map_or_else(|| c.state.clone(), |why| format!("{}: {why}", c.state)),
        );
        vec![
            t.id.clone(),
            t.kind.to_string(),
            t.workflow_name.clone().unwrap_or_else(|| t.workflow_id.clone()),
            render::text(t.name.as_deref(), 40),
            if t.paused { "yes" } else { "no" }.to_owned(),
            what,
            render::text(Some(&state), 60),
        ]
    });
    Ok(Exit::Success)
}

async fn create(api: &Api, output: Output, args: CreateArgs) -> CliResult<Exit> {
    let mut body = match args.settings.as_deref().map(|s| json_argument(s, "--settings")).transpose()? {
        Some(Value::Object(map)) => map,
        Some(_) => return Err(CliError::usage("--settings: give a JSON object")),
        None => serde_json::Map::new(),
    };
    let kind = match (&args.cron, &args.nats, &args.amqp, &args.mqtt) {
        (Some(_), ..) => "cron",
        (_, Some(_), ..) => "nats",
        (_, _, Some(_), _) => "amqp",
        (.., Some(_)) => "mqtt",
        _ => "webhook",
    };
    body.insert("kind".into(), json!(kind));
    body.insert("paused".into(), json!(args.paused));
    if let Some(max_queued) = args.max_queued {
        body.insert("max_queued".into(), json!(max_queued));
    }
    let url = args.nats.or(args.amqp).or(args.mqtt);
    let optional = [
        ("expression", args.cron),
        ("timezone", args.timezone),
        ("name", args.name),
        ("url", url),
        ("stream", args.stream),
        ("subject", args.subject),
        ("consumer", args.consumer),
        ("queue", args.queue),
        ("topic", args.topic),
        ("input", args.input),
        ("dedupe", args.dedupe),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            body.insert(key.into(), json!(value));
        }
    }
    let workflow = workflows::resolve(api, &args.workflow).await?;
    let created: CreatedTrigger = api.post(&format!("/workflows/{}/triggers", workflow.id), &body).await?;
    let mut fields = vec![("id", created.trigger.id.clone()), ("kind", created.trigger.kind.to_string())];
    fields.extend(created.trigger.url.clone().map(|url| ("url", url)));
    fields.extend(created.secret.clone().map(|secret| ("secret", format!("{secret}  (shown this once)"))));
    fields.extend(created.next_fire_times.as_ref().map(|times| ("next fires", times.join(", "))));
    render::one(output, &created, &fields);
    Ok(Exit::Success)
}
