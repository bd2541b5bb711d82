//! The flow-control settings' checks (`settings.throttle`, `settings.rate_limit`,
//! `settings.debounce`, `settings.priority`): numbers in range and keys (or a priority) that are
//! expressions. (A throttle always queues: `on_limit` is about the concurrency limits.)

use super::{Issue, SyntaxCheck, Text, MAX_CONCURRENCY_KEY_EXPRESSION};
use crate::flow::Priority;
use crate::Settings;

pub(super) fn check_windows(s: &Settings, errors: &mut Vec<Issue>, syntax: &mut SyntaxCheck<'_>) {
    for (name, window) in [("throttle", &s.throttle), ("rate_limit", &s.rate_limit)] {
        if let Some(window) = window {
            check_fields(name, window.problems(name), window.key.as_deref(), errors, syntax);
        }
    }
    check_priority(s, errors, syntax);
    if let Some(debounce) = &s.debounce {
        check_fields("debounce", debounce.problems(), debounce.key.as_deref(), errors, syntax);
    }
}

/// A setting's `problems` at their fields, then its `key` as an expression.
fn check_fields(
    name: &str,
    problems: Vec<(&'static str, String)>,
    key: Option<&str>,
    errors: &mut Vec<Issue>,
    syntax: &mut SyntaxCheck<'_>,
) {
    let at = |field: &str| format!("settings.{name}.{field}");
    for (field, message) in problems {
        errors.push(Issue::new("invalid_settings", message).path(at(field)));
    }
    if let Some(key) = key.filter(|k| !k.trim().is_empty()) {
        check_expression(&format!("{name}.key"), key, at("key"), errors, syntax);
    }
}

fn check_priority(s: &Settings, errors: &mut Vec<Issue>, syntax: &mut SyntaxCheck<'_>) {
    let Some(priority) = &s.priority else { return };
    if let Some(problem) = priority.problem() {
        errors.push(Issue::new("invalid_settings", problem).path("settings.priority"));
    } else if let Priority::Expression(expression) = priority {
        check_expression("priority", expression, "settings.priority".into(), errors, syntax);
    }
}

/// `expression` (the setting `setting`, at `path`) is short enough and compiles.
fn check_expression(
    setting: &str,
    expression: &str,
    path: String,
    errors: &mut Vec<Issue>,
    syntax: &mut SyntaxCheck<'_>,
) {
    let message = if expression.len() > MAX_CONCURRENCY_KEY_EXPRESSION {
        format!("`{setting}` is longer than {MAX_CONCURRENCY_KEY_EXPRESSION} characters")
    } else {
        match syntax(Text::Expression(expression)) {
            Ok(()) => return,
            Err(why) => format!("`{setting}` is not a valid expression: {why}"),
        }
    };
    errors.push(Issue::new("invalid_settings", message).path(path));
}
