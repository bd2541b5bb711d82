//! What redaction costs per node output: the output of an attempt that used 10 secrets is
//! redacted (every string and key scanned by one Aho-Corasick automaton over every form of the
//! 10 values, `trellis::secrets::Redactor`) before it is stored. Measured in this process for
//! outputs of 1 KB, 100 KB and 1 MB, beside what the same output costs on the same path without
//! redaction (NUL replacement and serializing it, as the store does), and the automaton's
//! construction per attempt.

use crate::scenarios::Figures;
use crate::stats::percentile;
use serde_json::{json, Value};
use std::time::Instant;
use trellis::secrets::Redactor;

const SECRETS: usize = 10;

/// 10 secrets of 40 characters, as API tokens are.
fn secrets() -> Vec<(String, String)> {
    (0..SECRETS).map(|i| (format!("TOKEN_{i}"), format!("tok_{i}_{}", "k7Qz9".repeat(7)))).collect()
}

/// An HTTP node's output of about `bytes`: a body of records, two of which echo a secret.
fn output(bytes: usize, secrets: &[(String, String)]) -> Value {
    let record =
        |i: usize| json!({"id": i, "name": format!("customer {i}"), "note": "lorem ipsum dolor sit amet consectetur"});
    let per_record = serde_json::to_vec(&record(0)).map_or(90, |v| v.len() + 1);
    let mut items: Vec<Value> = (0..(bytes / per_record).max(1)).map(record).collect();
    items[0]["token"] = json!(secrets[0].1);
    let last = items.len() - 1;
    items[last]["auth"] = json!(format!("Bearer {}", secrets[SECRETS - 1].1));
    json!({"status": 200, "headers": {"content-type": "application/json"}, "body": {"items": items}})
}

/// The stored form of `value` without redaction: what every output costs anyway.
fn stored(mut value: Value) -> usize {
    trellis::engine::json::replace_nul(&mut value);
    serde_json::to_vec(&value).map_or(0, |v| v.len())
}

fn stored_redacted(mut value: Value, redactor: &Redactor) -> usize {
    redactor.value(&mut value);
    stored(value)
}

/// p50 of `run` over `runs` runs, in µs, each on a fresh copy of `value` (the copy is not timed).
fn timed(value: &Value, runs: usize, run: impl Fn(Value) -> usize) -> f64 {
    let mut samples: Vec<f64> = (0..runs)
        .map(|_| {
            let copy = value.clone();
            let started = Instant::now();
            std::hint::black_box(run(copy));
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    percentile(&mut samples, 50.0)
}

pub fn redaction(runs: usize, out: &mut Figures) {
    let secrets = secrets();
    let pairs = || secrets.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    let mut build: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(Redactor::new(pairs()));
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    out.insert("secrets_redactor_build_10_us".into(), percentile(&mut build, 50.0));
    let redactor = Redactor::new(pairs());
    for (label, bytes) in [("1kb", 1_000), ("100kb", 100_000), ("1mb", 1_000_000)] {
        let value = output(bytes, &secrets);
        let mut check = value.clone();
        redactor.value(&mut check);
        assert!(!check.to_string().contains(&secrets[0].1), "the bench output is redacted");
        let runs = if bytes >= 1_000_000 { runs.min(30) } else { runs };
        out.insert(format!("secrets_output_{label}_plain_us"), timed(&value, runs, stored));
        out.insert(
            format!("secrets_output_{label}_redacted_us"),
            timed(&value, runs, |v| stored_redacted(v, &redactor)),
        );
    }
}
