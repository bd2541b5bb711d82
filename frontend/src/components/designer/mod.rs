//! The designer's components, one per file; their logic lives in `crate::designer`.

pub mod canvas;
pub mod code_editor;
pub mod conflict_dialog;
pub mod designer_page;
pub mod diff_canvas;
pub mod diff_panel;
pub mod edge_form;
pub mod expression_preview;
pub mod field_input;
pub mod gesture_overlays;
pub mod json_input;
pub mod leave_guard;
pub mod map_form;
pub mod node_box;
pub mod node_form;
pub mod palette;
pub mod run_panel;
pub mod script_preview;
pub mod secret_suggest;
pub mod settings_form;
pub mod side_panel;
pub mod state;
pub mod text_control;
pub mod toolbar;
pub mod versions_panel;
pub mod workflow_picker;
