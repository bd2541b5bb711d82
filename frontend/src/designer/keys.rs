//! Keyboard shortcuts of the designer, as pure functions from a key press to a command: which key
//! means what ([`shortcut`]) and when a press is not a shortcut at all ([`command`]).

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shortcut {
    Delete,
    Undo,
    Redo,
    Copy,
    Paste,
    SelectAll,
    Save,
    Deselect,
    Nudge(f64, f64),
    /// Zoom by this factor around the middle of the canvas.
    Zoom(f64),
    Fit,
}

/// A key press as the browser describes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyPress<'a> {
    /// `KeyboardEvent.key`.
    pub key: &'a str,
    pub ctrl: bool,
    /// Cmd on a Mac, which stands for Ctrl there.
    pub meta: bool,
    pub shift: bool,
    /// The tag name of the element the press is aimed at.
    pub target: &'a str,
}

/// The command for `press` while the designer shows the draft, or a version diff when `comparing`.
/// Typing in a form is not a shortcut, and a diff is read-only: both leave only Ctrl+S.
pub fn command(press: &KeyPress<'_>, comparing: bool) -> Option<Shortcut> {
    let action = shortcut(press.key, press.ctrl || press.meta, press.shift)?;
    let in_field = matches!(press.target.to_ascii_lowercase().as_str(), "input" | "textarea" | "select");
    (action == Shortcut::Save || !(in_field || comparing)).then_some(action)
}

/// The action for `key` (as `KeyboardEvent.key` names it) with Ctrl (or Cmd) and Shift.
pub fn shortcut(key: &str, ctrl: bool, shift: bool) -> Option<Shortcut> {
    let step = if shift { 50.0 } else { 10.0 };
    Some(match (key.to_ascii_lowercase().as_str(), ctrl) {
        ("delete" | "backspace", false) => Shortcut::Delete,
        ("z", true) if shift => Shortcut::Redo,
        ("z", true) => Shortcut::Undo,
        ("y", true) => Shortcut::Redo,
        ("c", true) => Shortcut::Copy,
        ("v", true) => Shortcut::Paste,
        ("a", true) => Shortcut::SelectAll,
        ("s", true) => Shortcut::Save,
        ("escape", _) => Shortcut::Deselect,
        ("+" | "=", false) => Shortcut::Zoom(1.25),
        ("-", false) => Shortcut::Zoom(0.8),
        ("0", false) => Shortcut::Fit,
        ("arrowleft", false) => Shortcut::Nudge(-step, 0.0),
        ("arrowright", false) => Shortcut::Nudge(step, 0.0),
        ("arrowup", false) => Shortcut::Nudge(0.0, -step),
        ("arrowdown", false) => Shortcut::Nudge(0.0, step),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_redo_and_friends() {
        assert_eq!(shortcut("z", true, false), Some(Shortcut::Undo));
        assert_eq!(shortcut("Z", true, true), Some(Shortcut::Redo));
        assert_eq!(shortcut("y", true, false), Some(Shortcut::Redo));
        assert_eq!(shortcut("Delete", false, false), Some(Shortcut::Delete));
        assert_eq!(shortcut("Backspace", false, false), Some(Shortcut::Delete));
        assert_eq!(shortcut("v", true, false), Some(Shortcut::Paste));
        assert_eq!(shortcut("ArrowLeft", false, true), Some(Shortcut::Nudge(-50.0, 0.0)));
        assert_eq!(shortcut("z", false, false), None);
        assert_eq!(shortcut("+", false, true), Some(Shortcut::Zoom(1.25)));
        assert_eq!(shortcut("-", false, false), Some(Shortcut::Zoom(0.8)));
        assert_eq!(shortcut("0", false, false), Some(Shortcut::Fit));
        assert_eq!(shortcut("Delete", true, false), None);
    }

    fn press<'a>(key: &'a str, target: &'static str) -> KeyPress<'a> {
        KeyPress { key, ctrl: false, meta: false, shift: false, target }
    }

    #[test]
    fn cmd_stands_for_ctrl() {
        let cmd_z = KeyPress { meta: true, ..press("z", "svg") };
        assert_eq!(command(&cmd_z, false), Some(Shortcut::Undo));
        let ctrl_shift_z = KeyPress { ctrl: true, shift: true, ..press("Z", "svg") };
        assert_eq!(command(&ctrl_shift_z, false), Some(Shortcut::Redo));
    }

    #[test]
    fn typing_in_a_form_is_not_a_shortcut_but_ctrl_s_saves() {
        for target in ["INPUT", "TEXTAREA", "SELECT", "input"] {
            assert_eq!(command(&press("Backspace", target), false), None, "{target}");
            assert_eq!(command(&KeyPress { ctrl: true, ..press("z", target) }, false), None, "{target}");
            assert_eq!(
                command(&KeyPress { ctrl: true, ..press("s", target) }, false),
                Some(Shortcut::Save),
                "{target}"
            );
        }
        assert_eq!(command(&press("Backspace", "svg"), false), Some(Shortcut::Delete));
        assert_eq!(command(&press("ArrowUp", "BUTTON"), false), Some(Shortcut::Nudge(0.0, -10.0)));
    }

    #[test]
    fn a_diff_takes_only_ctrl_s() {
        assert_eq!(command(&press("Delete", "svg"), true), None);
        assert_eq!(command(&press("0", "svg"), true), None);
        assert_eq!(command(&KeyPress { ctrl: true, ..press("s", "svg") }, true), Some(Shortcut::Save));
    }

    #[test]
    fn keys_that_mean_nothing_are_no_command() {
        assert_eq!(command(&press("q", "svg"), false), None);
        assert_eq!(command(&press("q", "INPUT"), false), None);
    }
}
