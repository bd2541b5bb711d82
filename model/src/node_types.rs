//! Every fact about each node type, in one row per kind: its name, what the palette shows, its
//! config fields (how the form edits each and whether the engine reads it as a template, an
//! expression or a script), whether it reads its instance's context, runs ahead of its
//! dispatch's commit, how it waits and whether a map may run it per item.
//!
//! Adding a node type is a variant of [`NodeKind`], its row here (the compiler asks for it in
//! [`NodeKind::spec`]), its config struct and check in `config.rs` (`check_config_with`, an
//! exhaustive match; a test ties the fields it compiles as expressions to this table's), and its
//! run in the engine's `nodes/`. The secret scan, the engine's scheduling (context, run ahead,
//! waits) and the designer's palette, icon and form read this table rather than list kinds.

use crate::config::{NodeKind, HTTP_METHODS};
use crate::map::ON_ITEM_FAILURE;
use crate::WaitKind;

/// One node type's facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeType {
    /// The name definitions use (`"http"`).
    pub name: &'static str,
    /// One line for the designer's palette.
    pub description: &'static str,
    pub group: PaletteGroup,
    /// A short symbol for the palette and the node boxes.
    pub icon: &'static str,
    /// Its config's fields, in the form's order.
    pub fields: &'static [ConfigField],
    /// It evaluates texts over the instance (its input and upstream outputs), so running an
    /// attempt needs the instance's state.
    pub reads_context: bool,
    /// It only computes over its instance: its attempts may run before the commit that
    /// dispatches them and be committed with it. A call out, a wait, a child or a map's
    /// items are seen outside the instance, or long, so they may not.
    pub runs_ahead: bool,
    /// What an attempt waits on once it suspends; `None` for a kind that never suspends.
    pub waits: Option<WaitKind>,
    /// A `map` may run it once per item.
    pub inside_map: bool,
    /// Its attempts may be held to a shared limit (`"limit": "NAME"`): it calls out, or
    /// runs user code, and what it calls may be shared with other workflows.
    pub takes_limit: bool,
}

/// Where the palette lists a node type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PaletteGroup {
    /// Shapes the run: branches, joins, failures, loops.
    Flow,
    /// Computes a value.
    Data,
    /// Reaches outside the instance: a call, a worker, another workflow.
    Calls,
    /// Waits for time or for someone.
    Waits,
}

impl PaletteGroup {
    pub const ALL: [PaletteGroup; 4] =
        [PaletteGroup::Flow, PaletteGroup::Data, PaletteGroup::Calls, PaletteGroup::Waits];

    pub fn label(self) -> &'static str {
        match self {
            PaletteGroup::Flow => "Flow",
            PaletteGroup::Data => "Data",
            PaletteGroup::Calls => "Calls",
            PaletteGroup::Waits => "Waits",
        }
    }
}

/// One top-level field of a node's config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigField {
    /// Where it is in the node (`config.url`): where its value is and where the validator's
    /// problems name it.
    pub path: &'static str,
    pub label: &'static str,
    pub input: FieldKind,
    /// How the engine reads the field's text.
    pub code: Code,
    pub hint: &'static str,
}

/// How the designer's form edits a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Text,
    /// A whole number of at least 0.
    Number,
    Select(&'static [&'static str]),
    /// Yes or no: a JSON boolean.
    Toggle,
    /// Any JSON value, typed as JSON.
    Json,
    /// An expression, with a preview against sample input.
    Expression,
    /// Comma-separated labels.
    List,
    /// JavaScript source: a code editor with a preview that runs on the server.
    Code,
    /// A workflow's id, picked from the workflow list.
    Workflow,
    /// `latest` or a version number (1 or more).
    Version,
}

/// How the engine reads a field: what in it is code, and so may reference a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// A value: nothing in it is evaluated (the secret scan still reads every string of a kind
    /// that renders, so a reference is never missed).
    Plain,
    /// Text (or strings inside JSON) whose `{{ }}` and `{% %}` blocks are evaluated.
    Template,
    /// An expression, evaluated whole.
    Expression,
    /// A JavaScript function body, run in the sandbox; it sees no secrets.
    Script,
}

const fn field(
    path: &'static str,
    label: &'static str,
    input: FieldKind,
    code: Code,
    hint: &'static str,
) -> ConfigField {
    ConfigField { path, label, input, code, hint }
}

impl ConfigField {
    /// Its key in `config`.
    pub fn name(&self) -> &'static str {
        self.path.strip_prefix("config.").unwrap_or(self.path)
    }
}

use Code::{Expression as Expr, Plain, Script as Js, Template};
use FieldKind as In;

const NOOP: NodeType = NodeType {
    name: "noop",
    description: "Does nothing; useful as a start, join or placeholder.",
    group: PaletteGroup::Flow,
    icon: "○",
    fields: &[],
    reads_context: false,
    runs_ahead: true,
    waits: None,
    inside_map: true,
    takes_limit: false,
};

const DELAY: NodeType = NodeType {
    name: "delay",
    description: "Waits for a duration or until a point in time (a durable timer).",
    group: PaletteGroup::Waits,
    icon: "◷",
    fields: &[
        field("config.duration_ms", "Duration (ms)", In::Number, Plain, "How long to wait."),
        field("config.until", "Until", In::Text, Plain, "Or an RFC 3339 time, e.g. 2026-01-31T09:00:00Z."),
    ],
    reads_context: false,
    runs_ahead: false,
    waits: Some(WaitKind::Timer),
    inside_map: true,
    takes_limit: false,
};

const HTTP: NodeType = NodeType {
    name: "http",
    description: "Calls an HTTP endpoint and outputs status, headers and body.",
    group: PaletteGroup::Calls,
    icon: "⇄",
    fields: &[
        field("config.method", "Method", In::Select(&HTTP_METHODS), Plain, ""),
        field("config.url", "URL", In::Text, Template, "May use {{ input.x }} and {{ secret.NAME }} templates."),
        field(
            "config.headers",
            "Headers (JSON object)",
            In::Json,
            Template,
            "e.g. {\"authorization\": \"Bearer {{ secret.API_TOKEN }}\"}",
        ),
        field("config.body", "Body (JSON)", In::Json, Template, "Strings inside may use templates."),
    ],
    reads_context: true,
    runs_ahead: false,
    waits: None,
    inside_map: true,
    takes_limit: true,
};

const TRANSFORM: NodeType = NodeType {
    name: "transform",
    description: "Computes a new JSON value from the input and earlier outputs.",
    group: PaletteGroup::Data,
    icon: "ƒ",
    fields: &[field("config.expression", "Expression", In::Expression, Expr, "e.g. {'total': input.a + input.b}")],
    reads_context: true,
    runs_ahead: true,
    waits: None,
    inside_map: true,
    takes_limit: false,
};

const BRANCH: NodeType = NodeType {
    name: "branch",
    description: "Evaluates a condition and follows the edges of its outcome.",
    group: PaletteGroup::Flow,
    icon: "◇",
    fields: &[
        field("config.condition", "Condition", In::Expression, Expr, "true/false, or an outcome label."),
        field("config.outcomes", "Outcomes", In::List, Plain, "Comma-separated labels; default true, false."),
    ],
    reads_context: true,
    runs_ahead: true,
    waits: None,
    inside_map: true,
    takes_limit: false,
};

const FAIL: NodeType = NodeType {
    name: "fail",
    description: "Fails, optionally only its first attempts (for testing retries).",
    group: PaletteGroup::Flow,
    icon: "✕",
    fields: &[
        field("config.message", "Message", In::Text, Template, ""),
        field("config.fail_attempts", "Fail the first N attempts", In::Number, Plain, "Empty: always fail."),
    ],
    reads_context: true,
    // It stands in for a failing call in tests and demos: it runs as one does.
    runs_ahead: false,
    waits: None,
    inside_map: true,
    takes_limit: false,
};

const WAIT_SIGNAL: NodeType = NodeType {
    name: "wait_signal",
    description: "Waits until a signal is sent to this node.",
    group: PaletteGroup::Waits,
    icon: "⚑",
    fields: &[],
    reads_context: false,
    runs_ahead: false,
    waits: Some(WaitKind::Signal),
    // An item has no node id of its own for a signal to name.
    inside_map: false,
    takes_limit: false,
};

const TASK: NodeType = NodeType {
    name: "task",
    description: "Hands work to an external worker polling a named queue.",
    group: PaletteGroup::Calls,
    icon: "⚙",
    fields: &[
        field("config.queue", "Queue", In::Text, Plain, "Workers poll this queue."),
        field("config.input", "Task input (JSON)", In::Json, Template, "Strings inside may use templates."),
    ],
    reads_context: true,
    runs_ahead: false,
    waits: Some(WaitKind::Task),
    // A task's lease is one work item's; a map's items have none.
    inside_map: false,
    takes_limit: true,
};

const SCRIPT: NodeType = NodeType {
    name: "script",
    description: "Runs a JavaScript function body in a sandbox; what it returns is the output.",
    group: PaletteGroup::Data,
    icon: "{}",
    fields: &[
        field(
            "config.source",
            "Script (JavaScript function body)",
            In::Code,
            Js,
            "Sees input, nodes.<id>.output and instance; return the output. Tab indents (Esc, Tab leaves).",
        ),
        field("config.memory_mb", "Memory limit (MiB)", In::Number, Plain, "Empty: 64."),
        field("config.timeout_ms", "Time limit (ms)", In::Number, Plain, "Empty: 1000."),
    ],
    reads_context: true,
    runs_ahead: true,
    waits: None,
    inside_map: true,
    takes_limit: true,
};

const SUBWORKFLOW: NodeType = NodeType {
    name: "subworkflow",
    description: "Runs another workflow as a child instance and outputs its output.",
    group: PaletteGroup::Calls,
    icon: "↪",
    fields: &[
        field(
            "config.workflow",
            "Workflow",
            In::Workflow,
            Plain,
            "Runs as a child instance; its output is this node's.",
        ),
        field(
            "config.version",
            "Version",
            In::Version,
            Plain,
            "latest (when the node runs) or a number; empty: latest.",
        ),
        field("config.input", "Child input", In::Expression, Expr, "Empty: this instance's input."),
    ],
    // Its input expression; and the parent's input, the default.
    reads_context: true,
    runs_ahead: false,
    waits: Some(WaitKind::Child),
    inside_map: true,
    takes_limit: true,
};

const MAP: NodeType = NodeType {
    name: "map",
    description: "Runs a node or a workflow once per item of a list; outputs the results in item order.",
    group: PaletteGroup::Flow,
    icon: "⊞",
    // What runs per item (the inner node's own fields, or a workflow) comes between the items
    // and the rest: the designer's map form.
    fields: &[
        field(
            "config.items",
            "Items",
            In::Expression,
            Expr,
            "A list, e.g. input.orders; each runs with item and index.",
        ),
        field("config.max_parallel", "Max parallel items", In::Number, Plain, "Empty: 10."),
        field(
            "config.on_item_failure",
            "When an item fails",
            In::Select(&ON_ITEM_FAILURE),
            Plain,
            "fail: the map fails; continue: its result is null.",
        ),
    ],
    // Its `items`.
    reads_context: true,
    runs_ahead: false,
    // Its items run (and wait) on their own; the map's attempt waits for them.
    waits: None,
    // A map over a sub-workflow that has one does the same, with its own page.
    inside_map: false,
    takes_limit: true,
};

const APPROVAL: NodeType = NodeType {
    name: "approval",
    description: "Asks people to approve or reject, with a form; waits for their decisions.",
    group: PaletteGroup::Waits,
    icon: "✓",
    fields: &[
        field("config.title", "Title", In::Text, Template, "The question, e.g. Refund {{ input.amount }} EUR?"),
        field("config.description", "Description", In::Text, Template, "Shown under the title; may use templates."),
        field(
            "config.assignees",
            "Assignees (JSON)",
            In::Json,
            Plain,
            "Who decides: {\"users\": [\"ann\"], \"roles\": [\"operator\"], \"groups\": [\"finance\"]}",
        ),
        field("config.required", "Approvals required", In::Number, Plain, "Empty: 1. The first rejection closes it."),
        field(
            "config.allow_starter",
            "Starter may decide",
            In::Toggle,
            Plain,
            "Whether whoever started the run may approve it.",
        ),
        field("config.form", "Answer form (JSON Schema)", In::Json, Plain, "What the approver fills in; empty: none."),
        field(
            "config.timeout_ms",
            "Time limit (ms)",
            In::Number,
            Plain,
            "Past it the node ends timed_out; empty: none.",
        ),
    ],
    // Its title and description are templates over the run.
    reads_context: true,
    runs_ahead: false,
    waits: Some(WaitKind::Approval),
    // An approval names its node; a map's items have no node of their own.
    inside_map: false,
    takes_limit: false,
};

impl NodeKind {
    /// The kind's row of the node-type table.
    pub fn spec(self) -> &'static NodeType {
        match self {
            NodeKind::Noop => &NOOP,
            NodeKind::Delay => &DELAY,
            NodeKind::Http => &HTTP,
            NodeKind::Transform => &TRANSFORM,
            NodeKind::Branch => &BRANCH,
            NodeKind::Fail => &FAIL,
            NodeKind::WaitSignal => &WAIT_SIGNAL,
            NodeKind::Task => &TASK,
            NodeKind::Script => &SCRIPT,
            NodeKind::Subworkflow => &SUBWORKFLOW,
            NodeKind::Map => &MAP,
            NodeKind::Approval => &APPROVAL,
        }
    }

    /// The config field named `name`, if the kind has one.
    pub fn field(self, name: &str) -> Option<&'static ConfigField> {
        self.spec().fields.iter().find(|f| f.name() == name)
    }

    /// Whether any of its config is read as a template or an expression (and so may
    /// reference a secret).
    pub fn renders(self) -> bool {
        self.spec().fields.iter().any(|f| matches!(f.code, Code::Template | Code::Expression))
    }
}

#[cfg(test)]
mod tests;
