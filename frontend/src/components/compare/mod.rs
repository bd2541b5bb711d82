//! `/compare?a=…&b=…`: two runs side by side (`compare_page` loads them, `compare_view` lays out
//! what `crate::compare` computes: both graphs, the node table, the JSON diffs).

pub mod compare_graph;
pub mod compare_page;
pub mod compare_view;
pub mod json_diff_table;
pub mod node_compare_table;
