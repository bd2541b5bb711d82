//! The live run view's parts (`/instances/:id`): the shared state and event stream, the graph,
//! the span timeline, the header with its actions, and the node table.

pub mod failure_links;
pub mod instance_header;
pub mod map_items;
pub mod no_such_instance;
pub mod node_details;
pub mod node_table;
pub mod queue_explain;
pub mod retry_form;
pub mod retry_from_here;
pub mod retry_summary;
pub mod run_actions;
pub mod run_again;
pub mod run_graph;
pub mod run_node;
pub mod span_details;
pub mod span_timeline;
pub mod state;
pub mod stream;
