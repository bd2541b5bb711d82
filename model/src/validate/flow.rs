//! The flow-control settings' checks (`settings.throttle`, `settings.rate_limit`): numbers in
//! range and a key that is an expression. (A throttle always queues: `on_limit` is about the
//! concurrency limits.)

use super::{Issue, SyntaxCheck, Text, MAX_CONCURRENCY_KEY_EXPRESSION};
use crate::flow::{Debounce, Priority, Window};
use crate::Settings;

pub(super) fn check_windows(s: &Settings, errors: &mut Vec<Issue>, syntax: &mut SyntaxCheck<'_>) {
    for (name, window) in [("throttle", &s.throttle), ("rate_limit", &s.rate_limit)] {
        if let Some(window) = window {
            check_window(name, window, errors, syntax);
        }
    }
    check_priority(s, errors, syntax);
    if let Some(debounce) = &s.debounce {
        check_debounce(debounce, errors, syntax);
    }
}

fn check_debounce(debounce: &Debounce, errors: &mut Vec<Issue>, syntax: &mut SyntaxCheck<'_>) {
    let issue = |field: &str, message: String| {
        Issue::new("invalid_settings", message).path(format!("settings.debounce.{field}"))
    };
    for (field, message) in debounce.problems() {
        errors.push(issue(field, message));
    }
    let Some(key) = debounce.key.as_deref().filter(|k| !k.trim().is_empty()) else { return };
    if key.len() > MAX_CONCURRENCY_KEY_EXPRESSION {
        errors.push(issue("key", format!("`debounce.key` is longer than {MAX_CONCURRENCY_KEY_EXPRESSION} characters")));
    } else if let Err(why) = syntax(Text::Expression(key)) {
        errors.push(issue("key", format!("`debounce.key` is not a valid expression: {why}")));
    }
}

fn check_priority(s: &Settings, errors: &mut Vec<Issue>, syntax: &mut SyntaxCheck<'_>) {
    let Some(priority) = &s.priority else { return };
    let issue = |message: String| Issue::new("invalid_settings", message).path("settings.priority");
    if let Some(problem) = priority.problem() {
        errors.push(issue(problem));
    } else if let Priority::Expression(expression) = priority {
        if expression.len() > MAX_CONCURRENCY_KEY_EXPRESSION {
            errors.push(issue(format!("`priority` is longer than {MAX_CONCURRENCY_KEY_EXPRESSION} characters")));
        } else if let Err(why) = syntax(Text::Expression(expression)) {
            errors.push(issue(format!("`priority` is not a valid expression: {why}")));
        }
    }
}

fn check_window(name: &str, window: &Window, errors: &mut Vec<Issue>, syntax: &mut SyntaxCheck<'_>) {
    let issue =
        |field: &str, message: String| Issue::new("invalid_settings", message).path(format!("settings.{name}.{field}"));
    for (field, message) in window.problems(name) {
        errors.push(issue(field, message));
    }
    let Some(key) = window.key.as_deref().filter(|k| !k.trim().is_empty()) else { return };
    if key.len() > MAX_CONCURRENCY_KEY_EXPRESSION {
        errors.push(issue("key", format!("`{name}.key` is longer than {MAX_CONCURRENCY_KEY_EXPRESSION} characters")));
    } else if let Err(why) = syntax(Text::Expression(key)) {
        errors.push(issue("key", format!("`{name}.key` is not a valid expression: {why}")));
    }
}
