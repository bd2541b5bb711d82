//! Keyboard shortcuts of the canvas, as a pure mapping from a key press to an action.

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
}
