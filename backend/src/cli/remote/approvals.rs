//! `trellis approval …`: what waits for my decision, one approval in full, and deciding it.

use super::api::Api;
use super::failure::{CliResult, Exit};
use super::input::json_argument;
use super::render::{self, Output};
use super::Target;
use clap::{Args, Subcommand};
use trellis_model::api::{Approval, ApprovalList, DecisionRequest, Verdict};

#[derive(Debug, Args)]
pub struct ApprovalArgs {
    #[command(subcommand)]
    pub command: ApprovalCommand,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalCommand {
    /// What waits for your decision (the default), what you decided, or every approval.
    #[command(after_help = "Examples:\n  trellis approval list\n  trellis approval list --decided\n  \
                            trellis approval list --all --status open")]
    List {
        /// Approvals you decided
        #[arg(long, conflicts_with = "all")]
        decided: bool,
        /// Every approval (operators and above)
        #[arg(long)]
        all: bool,
        /// `open` or `closed`
        #[arg(long)]
        status: Option<String>,
        /// At most this many
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// One approval: its question, assignees and decisions.
    Show {
        /// The approval's id
        id: String,
    },
    /// Approve: counts toward its `required` approvals.
    #[command(
        after_help = "Example:\n  trellis approval approve 0190… --comment 'looks right' --response '{\"amount\": 120}'"
    )]
    Approve(DecideArgs),
    /// Reject: the first rejection closes the approval.
    Reject(DecideArgs),
}

#[derive(Debug, Args)]
pub struct DecideArgs {
    /// The approval's id
    pub id: String,
    /// A comment kept with the decision
    #[arg(long, short = 'm')]
    pub comment: Option<String>,
    /// The answer to the approval's form: JSON, `@file` or `@-` (standard input)
    #[arg(long)]
    pub response: Option<String>,
}

pub async fn run(target: &Target, args: ApprovalArgs) -> CliResult<Exit> {
    let api = target.connect()?;
    let output = target.output;
    match args.command {
        ApprovalCommand::List { decided, all, status, limit } => {
            let mut query = vec![("limit", limit.to_string())];
            // What waits for me is open by definition: closed ones of mine are those I decided.
            let closed = status.as_deref() == Some("closed");
            match (decided || (closed && !all), all) {
                (true, _) => query.push(("decided", "true".into())),
                (false, false) => query.push(("mine", "true".into())),
                (false, true) => {}
            }
            query.extend(status.map(|s| ("status", s)));
            let page: ApprovalList = api.get("/approvals", &query).await?;
            list(output, &page.items);
            Ok(Exit::Success)
        }
        ApprovalCommand::Show { id } => {
            let approval: Approval = api.get(&format!("/approvals/{id}"), &[]).await?;
            show(output, &approval);
            Ok(Exit::Success)
        }
        ApprovalCommand::Approve(args) => decide(&api, output, Verdict::Approve, args).await,
        ApprovalCommand::Reject(args) => decide(&api, output, Verdict::Reject, args).await,
    }
}

async fn decide(api: &Api, output: Output, decision: Verdict, args: DecideArgs) -> CliResult<Exit> {
    let response = args.response.as_deref().map(|text| json_argument(text, "--response")).transpose()?;
    let body = DecisionRequest { decision, response, comment: args.comment };
    let approval: Approval = api.post(&format!("/approvals/{}/decision", args.id), &body).await?;
    show(output, &approval);
    Ok(Exit::Success)
}

fn list(output: Output, items: &[Approval]) {
    let columns = ["id", "status", "title", "workflow", "node", "approvals", "requested", "due"];
    render::list(output, items, &columns, |a| {
        vec![
            a.id.clone(),
            a.status.as_str().to_owned(),
            render::text(Some(&a.title), 50),
            render::text(Some(&a.workflow_name), 30),
            a.node.clone(),
            progress(a),
            render::time(Some(a.created_at)),
            render::time(a.due_at),
        ]
    });
}

fn show(output: Output, a: &Approval) {
    let decisions: Vec<String> = a
        .decisions
        .iter()
        .map(|d| match &d.comment {
            Some(comment) => format!("{} {} ({comment})", d.user, d.decision),
            None => format!("{} {}", d.user, d.decision),
        })
        .collect();
    let who: Vec<String> = [("user", &a.assignees.users), ("role", &a.assignees.roles), ("group", &a.assignees.groups)]
        .iter()
        .flat_map(|(kind, names)| names.iter().map(move |n| format!("{kind} {n}")))
        .collect();
    let fields = [
        ("id", a.id.clone()),
        ("title", a.title.clone()),
        ("status", a.status.as_str().to_owned()),
        ("workflow", a.workflow_name.clone()),
        ("instance", a.instance_id.clone()),
        ("assignees", who.join(", ")),
        ("approvals", progress(a)),
        ("decisions", if decisions.is_empty() { "-".into() } else { decisions.join("; ") }),
        ("you may decide", if a.can_decide { "yes" } else { "no" }.into()),
        ("due", render::time(a.due_at)),
    ];
    render::one(output, a, &fields);
}

/// "1 of 2".
fn progress(a: &Approval) -> String {
    let approved = a.decisions.iter().filter(|d| d.decision == "approved").count();
    format!("{approved} of {}", a.required)
}
