//! Caps on what an instance stores: each node's output, and the total of an instance's node
//! outputs. The instance's own output is a subset of its nodes' outputs (the leaves'), so
//! with these two caps `GET /instances/{id}` is bounded by the input cap plus twice the
//! instance cap, and an expression or an external worker cannot make the database, the
//! detail view or an attempt's context grow without bound.
//! Outputs are also held to the nesting limit (`trellis_model::nesting`), so that every
//! stored output can be read back.

use serde_json::Value;
use trellis_model::excerpt::excerpt;
pub use trellis_model::json_len::serialized_len;
use trellis_model::nesting::{too_deep, MAX_JSON_DEPTH};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputCaps {
    /// The largest output one node may store, serialized.
    pub node_bytes: usize,
    /// The largest total of one instance's stored node outputs, serialized.
    pub instance_bytes: usize,
}

impl OutputCaps {
    /// Why `output` of node `node` cannot be stored beside the instance's other nodes' stored
    /// outputs, which take `others_bytes` as JSON (`context::others_bytes`), if it cannot.
    /// `room`: levels Trellis itself built around values already held to the nesting limit
    /// (a map's `results`, a child instance's output), allowed beyond it.
    pub fn check(&self, node: &str, output: &Value, others_bytes: usize, room: usize) -> Result<(), String> {
        check_depth(node, output, MAX_JSON_DEPTH + room)?;
        let size = serialized_len(output);
        if size > self.node_bytes {
            return Err(format!(
                "the output of node `{node}` is {size} bytes, over the cap of {} bytes per node output (TRELLIS_MAX_NODE_OUTPUT_BYTES)",
                self.node_bytes
            ));
        }
        let total = size.saturating_add(others_bytes);
        if total > self.instance_bytes {
            return Err(format!(
                "with the output of node `{node}` ({size} bytes) the instance's outputs would total {total} bytes, \
                 over the cap of {} bytes per instance (TRELLIS_MAX_INSTANCE_OUTPUT_BYTES)",
                self.instance_bytes
            ));
        }
        Ok(())
    }
}

/// Why `output` of node `node`, nested deeper than `limit`, cannot be stored.
pub fn check_depth(node: &str, output: &Value, limit: usize) -> Result<(), String> {
    let Some(path) = too_deep(output, limit) else { return Ok(()) };
    let path = excerpt(&path, super::json::MAX_PATH_SHOWN);
    Err(format!(
        "the output of node `{node}` nests deeper than {limit} levels (at `{path}`); {}",
        super::json::depth_rule()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outputs_over_either_cap_are_refused_naming_it() {
        let caps = OutputCaps { node_bytes: 10, instance_bytes: 20 };
        assert!(caps.check("a", &json!("12345678"), 0, 0).is_ok());
        let node = caps.check("a", &json!("123456789012"), 0, 0).unwrap_err();
        assert!(
            node.contains("14 bytes, over the cap of 10 bytes per node output (TRELLIS_MAX_NODE_OUTPUT_BYTES)"),
            "{node}"
        );
        let others = 2 * serialized_len(&json!("12345678"));
        let total = caps.check("a", &json!("12"), others, 0).unwrap_err();
        assert!(total.contains("would total 24 bytes, over the cap of 20 bytes per instance"), "{total}");
    }

    #[test]
    fn outputs_nested_too_deep_are_refused_with_room_for_what_trellis_wraps() {
        let caps = OutputCaps { node_bytes: 1 << 20, instance_bytes: 1 << 20 };
        let nested = |levels: usize| (0..levels).fold(json!(1), |inner, _| json!([inner]));
        assert!(caps.check("a", &nested(MAX_JSON_DEPTH), 0, 0).is_ok());
        let deep = caps.check("a", &nested(MAX_JSON_DEPTH + 1), 0, 0).unwrap_err();
        assert!(deep.starts_with("the output of node `a` nests deeper than 64 levels (at `/0/0/0"), "{deep}");
        assert!(caps.check("a", &nested(MAX_JSON_DEPTH + 2), 0, 2).is_ok());
        assert!(caps.check("a", &nested(MAX_JSON_DEPTH + 3), 0, 2).is_err());
    }
}
