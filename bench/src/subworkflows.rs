//! A sub-workflow chain's end-to-end time beside the same nodes inline, in one run: what each
//! level of nesting costs (a child start, its admission, the wake of its parent).

use crate::scenarios::Figures;
use crate::server::Api;
use crate::stats::percentile;
use anyhow::Result;
use serde_json::{json, Value};
use std::time::Duration;

/// `noop → <middle> → noop`, the middle node given.
fn around(middle: Value) -> Value {
    json!({
        "nodes": [{"id": "before", "type": "noop"}, middle, {"id": "after", "type": "noop"}],
        "edges": [{"from": "before", "to": "call"}, {"from": "call", "to": "after"}]
    })
}

fn call(workflow: &str) -> Value {
    json!({"id": "call", "type": "subworkflow", "config": {"workflow": workflow}})
}

/// Parent → child → grandchild, each `noop → call → noop` around a 3-noop leaf (7 noops in
/// all), against one instance of the same 7 noops chained inline; runs alternate so both see
/// the same machine. Created → ended of the top instance.
pub async fn chain(api: &Api, runs: usize, out: &mut Figures) -> Result<()> {
    let leaf = api.publish("bench sub leaf", crate::scenarios::chain(3)).await?;
    let middle = api.publish("bench sub middle", around(call(&leaf))).await?;
    let top = api.publish("bench sub top", around(call(&middle))).await?;
    let inline = api.publish("bench sub inline", crate::scenarios::chain(7)).await?;
    let (mut nested, mut flat) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (workflow, samples) in [(&top, &mut nested), (&inline, &mut flat)] {
            samples.extend(api.instance_time_ms(workflow, Duration::from_millis(2)).await?);
        }
    }
    let (nested, flat) = (percentile(&mut nested, 50.0), percentile(&mut flat, 50.0));
    out.insert("subworkflow_chain3_p50_ms".into(), nested);
    out.insert("subworkflow_inline7_p50_ms".into(), flat);
    out.insert("subworkflow_per_level_ms".into(), (nested - flat) / 2.0);
    Ok(())
}
