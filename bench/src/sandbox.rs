//! What running user code in sandbox workers costs, beside the in-process figure of the same
//! run. Three views: one evaluation, measured from this process against a pool of the same
//! workers the server starts and against the evaluator in this process; the same with a 1 MB
//! upstream output in scope of which the expression reads one field; and end to end, chain-10
//! of transforms against chain-10 of nodes that take the same path without evaluating
//! anything (a `fail` node told to succeed: dispatched, its context read, its output
//! committed, no sandbox call) — one at a time, and a drain of many. That chain is the
//! in-process drain's ceiling: evaluating in process cannot be faster than not evaluating.

use crate::scenarios::{chain_of, Figures};
use crate::server::Api;
use crate::stats::percentile;
use anyhow::{ensure, Result};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use trellis::sandbox::{Job, Sandbox, SandboxSettings};
use trellis_model::expr::Expressions;

/// A transform a workflow would have: a few fields read, a filter, an object built.
const EXPRESSION: &str =
    "{'id': nodes.fetch.output.body.id, 'total': input.order.lines | sum, 'who': input.customer | upper}";

fn context(upstream_bytes: usize) -> Value {
    json!({
        "input": {"order": {"lines": [1, 2, 3, 4]}, "customer": "acme"},
        "nodes": {"fetch": {"status": "succeeded", "output": {"status": 200, "body": {"id": 4411, "blob": "b".repeat(upstream_bytes)}}}},
        "instance": {"id": "bench"}
    })
}

/// p50 and p99 of `samples`, in µs.
fn spread(samples: &mut [f64]) -> (f64, f64) {
    (percentile(samples, 50.0), percentile(samples, 99.0))
}

/// One evaluation in this process and in a worker, with a small context and with 1 MB in
/// scope (read one field of, and read whole).
pub async fn evaluation(binary: &str, runs: usize, out: &mut Figures) -> Result<()> {
    let settings = SandboxSettings {
        program: binary.into(),
        workers: 2,
        memory_mib: 256,
        timeout_ms: 10_000,
        max_result_bytes: 2 << 20,
    };
    let sandbox = Sandbox::start(settings).await?;
    let expressions = Expressions::default();
    for (label, upstream) in [("small", 16), ("1mb_in_scope", 1024 * 1024)] {
        let context = context(upstream);
        let expected = expressions.eval(EXPRESSION, &context).map_err(anyhow::Error::msg)?;
        let (mut local, mut remote) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        for _ in 0..runs {
            let started = Instant::now();
            let value = expressions.eval(EXPRESSION, &context);
            local.push(started.elapsed().as_secs_f64() * 1e6);
            std::hint::black_box(value).ok();
            let started = Instant::now();
            let value = sandbox.evaluate(vec![Job::Eval(EXPRESSION.into())], &context, None).await;
            remote.push(started.elapsed().as_secs_f64() * 1e6);
            ensure!(value == Ok(Ok(vec![expected.clone()])), "the sandbox gives what the evaluator gives: {value:?}");
        }
        let ((local_p50, local_p99), (remote_p50, remote_p99)) = (spread(&mut local), spread(&mut remote));
        out.insert(format!("sandbox_eval_{label}_inprocess_p50_us"), local_p50);
        out.insert(format!("sandbox_eval_{label}_inprocess_p99_us"), local_p99);
        out.insert(format!("sandbox_eval_{label}_worker_p50_us"), remote_p50);
        out.insert(format!("sandbox_eval_{label}_worker_p99_us"), remote_p99);
        out.insert(format!("sandbox_eval_{label}_overhead_p50_us"), remote_p50 - local_p50);
        out.insert(format!("sandbox_eval_{label}_overhead_p99_us"), remote_p99 - local_p99);
    }
    // What narrowing saves: an expression that does read the whole megabyte has it sent.
    let context = context(1024 * 1024);
    let whole = "nodes.fetch.output.body.blob | length";
    let mut samples = Vec::with_capacity(runs / 10 + 1);
    for _ in 0..runs / 10 + 1 {
        let started = Instant::now();
        sandbox.evaluate(vec![Job::Eval(whole.into())], &context, None).await.map_err(|e| anyhow::anyhow!("{e}"))?.ok();
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    out.insert("sandbox_eval_1mb_read_whole_worker_p50_us".into(), percentile(&mut samples, 50.0));
    Ok(())
}

/// Chain-10 of transforms against chain-10 of the same path without evaluation: one at a
/// time (p50 per instance, and per node the difference), and `count` of each drained at once
/// (instances per second).
pub async fn end_to_end(api: &Api, runs: usize, count: usize, out: &mut Figures) -> Result<()> {
    let transform = json!({"type": "transform", "config": {"expression": "{'n': input.n | default(0) + 1, 'who': 'acme' | upper}"}});
    let transforms = api.publish("bench chain-10 transform", chain_of(10, &transform)).await?;
    let unevaluated = json!({"type": "fail", "config": {"fail_attempts": 0}});
    let noops = api.publish("bench chain-10 unevaluated (sandbox baseline)", chain_of(10, &unevaluated)).await?;
    api.instance_time_ms(&transforms, Duration::from_millis(2)).await?;
    let (mut noop_ms, mut transform_ms) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        noop_ms.extend(api.instance_time_ms(&noops, Duration::from_millis(2)).await?);
        transform_ms.extend(api.instance_time_ms(&transforms, Duration::from_millis(2)).await?);
    }
    let (noop, transform) = (percentile(&mut noop_ms, 50.0), percentile(&mut transform_ms, 50.0));
    out.insert("sandbox_chain10_transform_p50_ms".into(), transform);
    out.insert("sandbox_chain10_unevaluated_p50_ms".into(), noop);
    out.insert("sandbox_transform_cost_per_node_ms".into(), (transform - noop) / 10.0);
    let mut drained = Vec::new();
    for workflow in [&noops, &transforms] {
        let started = Instant::now();
        api.start_many(workflow, count, 16).await?;
        let counts = api.drain(workflow, Duration::from_millis(20)).await?;
        ensure!(counts["failed"].as_i64() == Some(0), "the drain succeeds: {counts}");
        drained.push(count as f64 / started.elapsed().as_secs_f64());
    }
    out.insert("sandbox_drain_unevaluated_instances_per_s".into(), drained[0]);
    out.insert("sandbox_drain_transform_instances_per_s".into(), drained[1]);
    out.insert("sandbox_drain_ratio_to_unevaluated".into(), drained[1] / drained[0]);
    Ok(())
}
