//! The server's validation of a definition: the model's rules (the ones the designer runs in
//! the browser), with every expression compiled in the sandbox rather than in this process
//! (checking a text evaluates its constant expressions, which user text can make allocate
//! without bound: `sandbox/worker/folding.rs`), plus what only the server can check — that
//! every script compiles.

use crate::sandbox::protocol::Source;
use crate::sandbox::script::{Failure, FailureKind};
use crate::sandbox::{Sandbox, Stopped};
use std::collections::BTreeSet;
use trellis_model::config::{NodeKind, ScriptConfig};
use trellis_model::{Definition, Issue, Limits, Report};

/// Validates `def` as a save or a publish must: every problem at once. `Err`: the sandbox
/// could not compile for a reason of its own (not the definition's); try again.
pub async fn validate(def: &Definition, limits: &Limits, sandbox: &Sandbox) -> Result<Report, Stopped> {
    // The model calls back for each expression in a fixed order: the first pass collects
    // them, the sandbox compiles them, the second pass reads the results.
    let mut texts = Vec::new();
    trellis_model::validate_with(def, limits, &mut |text| {
        texts.push(Source::of(text));
        Ok(())
    });
    let syntax = sandbox.syntax_of(texts).await?;
    let mut report =
        trellis_model::validate_with(def, limits, &mut |text| syntax.get(&Source::of(text)).cloned().unwrap_or(Ok(())));
    if report.errors.iter().any(|e| matches!(e.code.as_str(), "too_large" | "too_many_nodes" | "too_many_edges")) {
        // An oversized definition is not analysed further (see `trellis_model::validate`).
        return Ok(report);
    }
    let mut problems = script_problems(def, sandbox).await?;
    // The model checked the schema's shape; compiling it says whether it is one.
    let schema = def.settings.input_schema.as_ref().filter(|s| s.is_object() || s.is_boolean());
    problems.extend(schema.and_then(super::input_schema::schema_issue));
    problems.extend(form_problems(def));
    report.valid &= problems.is_empty();
    report.errors.extend(problems);
    Ok(report)
}

/// A problem for each `approval` node whose answer `form` does not compile as a JSON Schema
/// (the model checked its shape).
fn form_problems(def: &Definition) -> Vec<Issue> {
    let approvals = def.nodes.iter().enumerate().filter(|(_, n)| NodeKind::parse(&n.kind) == Some(NodeKind::Approval));
    approvals
        .filter_map(|(i, node)| {
            let config: trellis_model::approval::ApprovalConfig = serde_json::from_value(node.config.clone()).ok()?;
            let form = config.form.filter(|f| f.is_object() || f.is_boolean())?;
            let why = super::input_schema::compile(&form).err()?;
            let message = format!("`form` is not a valid JSON Schema: {why}");
            Some(Issue::new("invalid_config", message).node(&node.id).path(format!("nodes[{i}].config.form")))
        })
        .collect()
}

/// Adds a problem for each reference to a secret not in `known` (naming it) and each use of
/// `secret` that names none (`secret[x]`, `secret | tojson`): the engine opens exactly the
/// secrets a node names, and a typo should fail here, not in a run.
pub fn check_secrets(report: &mut Report, def: &Definition, known: &BTreeSet<String>) {
    let mut problems = Vec::new();
    for (i, node) in def.nodes.iter().enumerate() {
        let Some(kind) = NodeKind::parse(&node.kind) else { continue };
        match trellis_model::secret::node_references_at(kind, &node.config) {
            Ok(names) => {
                for (name, path) in names.iter().filter(|(name, _)| !known.contains(*name)) {
                    let message = format!("there is no secret named `{name}`; create it under Secrets or fix the name");
                    problems
                        .push(Issue::new("unknown_secret", message).node(&node.id).path(format!("nodes[{i}].{path}")));
                }
            }
            Err(bad) => problems.extend(bad.into_iter().map(|b| {
                Issue::new("secret_reference", b.message).node(&node.id).path(format!("nodes[{i}].{}", b.path))
            })),
        }
    }
    report.valid &= problems.is_empty();
    report.errors.extend(problems);
}

/// A problem for each script node whose source does not compile, at `nodes[i].config.source`
/// with the script's own line and column. Nodes whose config is invalid otherwise are left
/// to the model's checks. Compiling runs none of the script.
async fn script_problems(def: &Definition, sandbox: &Sandbox) -> Result<Vec<Issue>, Stopped> {
    let scripts: Vec<(usize, String)> = def
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, node)| NodeKind::parse(&node.kind) == Some(NodeKind::Script))
        .filter_map(|(i, node)| Some((i, serde_json::from_value::<ScriptConfig>(node.config.clone()).ok()?.source)))
        .filter(|(_, source)| !source.trim().is_empty())
        .collect();
    if scripts.is_empty() {
        return Ok(Vec::new());
    }
    let sources: Vec<String> = scripts.iter().map(|(_, source)| source.clone()).collect();
    let compiled = match sandbox.check(Vec::new(), sources).await {
        Ok(checked) => Ok(checked.scripts),
        // Compiling met a limit: every script is named, as which one did cannot be told.
        Err(stopped) if stopped.cause.is_limit() => Err(stopped.message),
        Err(stopped) => return Err(stopped),
    };
    let mut problems = Vec::new();
    for (n, (i, _)) in scripts.iter().enumerate() {
        let message = match &compiled {
            Ok(results) => match results.get(n) {
                Some(Ok(())) => continue,
                Some(Err(failure)) => syntax_message(failure),
                None => "the script could not be checked; try again".to_owned(),
            },
            Err(limit) => format!("the script could not be compiled: {limit}"),
        };
        let node = &def.nodes[*i];
        problems.push(Issue::new("script_syntax", message).node(&node.id).path(format!("nodes[{i}].config.source")));
    }
    Ok(problems)
}

/// `line 3, column 9: unexpected token in expression: ';'`
pub fn syntax_message(failure: &Failure) -> String {
    match (failure.kind, failure.at) {
        (FailureKind::Syntax, Some(at)) => format!("line {}, column {}: {}", at.line, at.column, failure.message),
        (FailureKind::Syntax, None) => failure.message.clone(),
        _ => format!("the script could not be compiled: {}", failure.message),
    }
}

/// Adds a problem for each node naming a shared limit not in `known` (naming it): the limit
/// must exist before a version can hold attempts to it.
pub fn check_limits(report: &mut Report, def: &Definition, known: &BTreeSet<String>) {
    let problems: Vec<Issue> = trellis_model::shared_limit::named_limits(def)
        .into_iter()
        .filter(|(_, _, _, name)| !known.contains(name))
        .map(|(_, node, path, name)| {
            let message = format!("there is no shared limit named `{name}`; create it under Limits or fix the name");
            Issue::new("unknown_limit", message).node(node).path(path)
        })
        .collect();
    report.valid &= problems.is_empty();
    report.errors.extend(problems);
}
