//! The approvals pages' logic as plain Rust, native-tested: what each inbox tab asks
//! `GET /approvals` for, what a row says of an approval's progress, who may decide it in words,
//! times relative to now, why the signed-in person may not decide, and what a refused decision
//! means. The components in `components/approvals/` only draw what these compute.

use crate::error::ApiError;
use crate::paged::Keyed;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeSet;
use trellis_model::api::{Approval, ApprovalStatus, Assignees, NodeView, MAX_COMMENT_BYTES};
use trellis_model::{Definition, NodeStatus};

/// The inbox's tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Inbox {
    /// Open approvals the caller may decide now.
    #[default]
    Mine,
    /// Approvals the caller decided.
    Decided,
    /// Every approval (operators and up).
    All,
}

impl Inbox {
    pub const TABS: [Inbox; 3] = [Inbox::Mine, Inbox::Decided, Inbox::All];

    pub fn label(self) -> &'static str {
        match self {
            Inbox::Mine => "Waiting for me",
            Inbox::Decided => "Decided by me",
            Inbox::All => "All",
        }
    }

    /// Its value in the page's address (`/approvals?show=decided`).
    pub fn param(self) -> &'static str {
        match self {
            Inbox::Mine => "mine",
            Inbox::Decided => "decided",
            Inbox::All => "all",
        }
    }

    /// The tab an address names; anything else is the default.
    pub fn parse(param: Option<&str>) -> Self {
        Inbox::TABS.into_iter().find(|t| Some(t.param()) == param).unwrap_or_default()
    }
}

/// Which approvals the All tab lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shown {
    #[default]
    Open,
    Closed,
    Any,
}

impl Shown {
    pub const CHOICES: [Shown; 3] = [Shown::Open, Shown::Closed, Shown::Any];

    pub fn label(self) -> &'static str {
        match self {
            Shown::Open => "Open",
            Shown::Closed => "Closed",
            Shown::Any => "Open and closed",
        }
    }

    pub fn param(self) -> &'static str {
        match self {
            Shown::Open => "open",
            Shown::Closed => "closed",
            Shown::Any => "any",
        }
    }

    pub fn parse(param: Option<&str>) -> Self {
        Shown::CHOICES.into_iter().find(|s| Some(s.param()) == param).unwrap_or_default()
    }
}

/// The `GET /approvals` filters of a tab; the status choice counts only on All.
pub fn filters(inbox: Inbox, shown: Shown) -> Vec<(&'static str, &'static str)> {
    match (inbox, shown) {
        (Inbox::Mine, _) => vec![("mine", "true")],
        (Inbox::Decided, _) => vec![("decided", "true")],
        (Inbox::All, Shown::Any) => Vec::new(),
        (Inbox::All, shown) => vec![("status", shown.param())],
    }
}

/// The inbox's address for a tab (and the All tab's status), so a tab can be bookmarked.
pub fn inbox_page(inbox: Inbox, shown: Shown) -> String {
    match inbox {
        Inbox::Mine => crate::urls::APPROVALS_PAGE.to_owned(),
        Inbox::Decided => format!("{}?show=decided", crate::urls::APPROVALS_PAGE),
        Inbox::All => format!("{}?show=all&status={}", crate::urls::APPROVALS_PAGE, shown.param()),
    }
}

/// What an empty tab says: what an approval is, and how one comes to be here.
pub fn empty_text(inbox: Inbox, shown: Shown) -> &'static str {
    match (inbox, shown) {
        (Inbox::Mine, _) => {
            "Nothing waits for you. An approval is a question a run asks people: a workflow's approval node \
             stops the run until its assignees approve or one rejects. When a run reaches one that names you \
             (or your role or group), it is listed here."
        }
        (Inbox::Decided, _) => "You have decided no approval yet. Approvals you approve or reject are listed here.",
        (Inbox::All, Shown::Open) => {
            "No approval is open. A run that reaches a workflow's approval node opens one, and it waits here \
             until its assignees decide."
        }
        (Inbox::All, Shown::Closed) => {
            "No approval has closed yet. One closes when it is approved, rejected, times out, or its run ends \
             first."
        }
        (Inbox::All, Shown::Any) => {
            "No approvals yet. A run that reaches a workflow's approval node opens one; add an approval node \
             in the designer (palette, Waits) to ask people before a run goes on."
        }
    }
}

/// An approval as the inbox's paged list keeps it: keyed by its id, so a row on two pages
/// shows once.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxRow {
    key: String,
    pub approval: Approval,
}

impl From<Approval> for InboxRow {
    fn from(approval: Approval) -> Self {
        InboxRow { key: approval.id.to_string(), approval }
    }
}

impl Keyed for InboxRow {
    fn key(&self) -> &str {
        &self.key
    }
}

/// How many of its decisions approve.
pub fn approvals_so_far(a: &Approval) -> usize {
    a.decisions.iter().filter(|d| d.decision == "approved").count()
}

/// The progress cell: "1 of 2 approvals" while open, how it closed once closed, and what the
/// signed-in person (`me`) decided, when they did.
pub fn progress(a: &Approval, me: Option<&str>) -> String {
    let mut text = match a.status {
        ApprovalStatus::Open => format!("{} of {} approvals", approvals_so_far(a), a.required),
        _ => closing(a),
    };
    if let Some(mine) = me.and_then(|me| a.decisions.iter().find(|d| d.user == me)) {
        text.push_str(&format!(" · you {}", mine.decision));
    }
    text
}

/// A status as a word.
pub fn status_words(status: ApprovalStatus) -> &'static str {
    match status {
        ApprovalStatus::TimedOut => "timed out",
        other => other.as_str(),
    }
}

/// How a closed approval closed, in a sentence fragment ("Approved by ann and bob").
pub fn closing(a: &Approval) -> String {
    let deciders = |verdict: &str| {
        let names: Vec<&str> = a.decisions.iter().filter(|d| d.decision == verdict).map(|d| d.user.as_str()).collect();
        match names.as_slice() {
            [] => String::new(),
            [one] => format!(" by {one}"),
            [rest @ .., last] => format!(" by {} and {last}", rest.join(", ")),
        }
    };
    match a.status {
        ApprovalStatus::Open => format!("Open: {} of {} approvals", approvals_so_far(a), a.required),
        ApprovalStatus::Approved => format!("Approved{}", deciders("approved")),
        ApprovalStatus::Rejected => format!("Rejected{}", deciders("rejected")),
        ApprovalStatus::TimedOut => "Timed out before it was decided".to_owned(),
        ApprovalStatus::Canceled => "Canceled: its run ended or moved on before it was decided".to_owned(),
    }
}

/// Who may decide, one phrase each ("ann", "anyone with role operator or higher", "members of
/// group finance").
pub fn who_may_decide(a: &Assignees) -> Vec<String> {
    let users = a.users.iter().cloned();
    let roles = a.roles.iter().map(|r| match r.as_str() {
        "admin" => "admins".to_owned(),
        role => format!("anyone with role {role} or higher"),
    });
    let groups = a.groups.iter().map(|g| format!("members of group {g}"));
    users.chain(roles).chain(groups).collect()
}

/// A past instant relative to `now`: "just now", "5 min ago", "3 h ago", "2 days ago", or the
/// time itself once a week old.
pub fn ago(at: &DateTime<Utc>, now: DateTime<Utc>) -> String {
    match (now - *at).num_seconds().max(0) {
        s if s < 60 => "just now".to_owned(),
        s if s < 3_600 => format!("{} min ago", s / 60),
        s if s < 86_400 => format!("{} h ago", s / 3_600),
        s if s < 172_800 => "1 day ago".to_owned(),
        s if s < 604_800 => format!("{} days ago", s / 86_400),
        _ => crate::format::timestamp(at),
    }
}

/// When an open approval times out, relative to `now`: "in 5 min", "in 3 h", "in 2 days", or
/// "now" once passed (the timer closes it any moment).
pub fn due_in(due: &DateTime<Utc>, now: DateTime<Utc>) -> String {
    match (*due - now).num_seconds() {
        s if s <= 0 => "now".to_owned(),
        s if s < 60 => "in less than a minute".to_owned(),
        s if s < 3_600 => format!("in {} min", s / 60),
        s if s < 86_400 => format!("in {} h", s / 3_600),
        s if s < 172_800 => "in 1 day".to_owned(),
        s => format!("in {} days", s / 86_400),
    }
}

/// Why the signed-in person (`me`) may not decide an open approval, or `None` when they may
/// (or it is closed: the page says how it closed instead).
pub fn why_not(a: &Approval, me: Option<&str>) -> Option<String> {
    if a.can_decide || !a.status.is_open() {
        return None;
    }
    if let Some(mine) = me.and_then(|me| a.decisions.iter().find(|d| d.user == me)) {
        return Some(format!("You {} it already; the others named still decide.", mine.decision));
    }
    if me.is_some() && a.started_by.as_deref() == me && !a.allow_starter {
        return Some("You started this run, and its approval node does not let the starter decide.".to_owned());
    }
    Some("Only the people named under “Who may decide” can decide it.".to_owned())
}

/// What a refused answer says while fields are marked with what the form needs.
pub const FORM_PROBLEM: &str = "The answer does not fit the form: see the marked fields.";

/// What a refused decision means, in a sentence for the person who tried.
pub fn decision_problem(err: &ApiError) -> String {
    let ApiError::Problem(p) = err else { return err.message() };
    let detail = p.detail.as_deref().map(str::trim).filter(|d| !d.is_empty());
    // The server's detail may end without a full stop; the page's sentence after it needs one.
    let with_detail = |lead: &str| match detail {
        Some(d) if d.ends_with(['.', '!', '?']) => format!("{lead}: {d}"),
        Some(d) => format!("{lead}: {d}."),
        None => format!("{lead}."),
    };
    match p.status {
        403 => with_detail("You may not decide this approval"),
        409 => format!("{} It now shows where it stands.", with_detail("It was decided already or has closed")),
        413 => with_detail("Too long to keep"),
        422 if !p.errors.is_empty() => FORM_PROBLEM.to_owned(),
        422 => with_detail("The answer does not fit the form"),
        _ => err.message(),
    }
}

/// Why a comment cannot be sent, before it is: the server keeps at most `MAX_COMMENT_BYTES`.
pub fn comment_problem(comment: &str) -> Option<String> {
    (comment.len() > MAX_COMMENT_BYTES)
        .then(|| format!("The comment is too long: {} bytes, at most {MAX_COMMENT_BYTES}.", comment.len()))
}

/// What the nodes before the approval produced: the output of each succeeded node it comes
/// after in the graph (every succeeded node but itself until the graph is read), in the order
/// the run lists them. Those are what the approver is asked to judge.
pub fn earlier_outputs(nodes: &[NodeView], graph: Option<&Definition>, approval_node: &str) -> Vec<(String, Value)> {
    let before = graph.map(|d| upstream(d, approval_node));
    nodes
        .iter()
        .filter(|n| n.id != approval_node && n.status == NodeStatus::Succeeded)
        .filter(|n| before.as_ref().is_none_or(|b| b.contains(n.id.as_str())))
        .filter_map(|n| Some((n.id.clone(), n.output.clone()?)))
        .collect()
}

/// Every node with a path of edges to `node`.
fn upstream<'d>(graph: &'d Definition, node: &str) -> BTreeSet<&'d str> {
    let mut found = BTreeSet::new();
    let mut next = vec![node];
    while let Some(to) = next.pop() {
        for edge in graph.edges.iter().filter(|e| e.to == to) {
            if found.insert(edge.from.as_str()) {
                next.push(edge.from.as_str());
            }
        }
    }
    found
}

/// A run view node's approval: its page, and whether the node waits for it now.
pub fn node_approval(node: &NodeView) -> Option<(String, bool)> {
    let id = node.approval.as_deref()?;
    Some((crate::urls::approval_page(id), node.status == NodeStatus::Waiting))
}

#[cfg(test)]
#[path = "approvals_tests.rs"]
mod tests;
