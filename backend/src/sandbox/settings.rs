//! The sandbox's settings, read from the server's.

use super::SandboxSettings;
use crate::config::ServeConfig;

impl SandboxSettings {
    /// The worker program defaults to the running binary; sizes are held to sane leasts.
    pub fn from_config(c: &ServeConfig) -> anyhow::Result<SandboxSettings> {
        let program = match &c.sandbox_worker {
            Some(path) => path.clone(),
            None => std::env::current_exe().map_err(|e| {
                anyhow::anyhow!("cannot find this binary to run sandbox workers ({e}); set TRELLIS_SANDBOX_WORKER")
            })?,
        };
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(SandboxSettings {
            program,
            workers: c.sandbox_workers.filter(|&n| n > 0).unwrap_or(cores),
            memory_mib: c.sandbox_memory_mb.max(16),
            timeout_ms: c.sandbox_timeout_ms.max(100),
            // Well over a node's output cap: a result the engine would refuse reaches it (and
            // its message); far larger ones stop in the worker.
            max_result_bytes: c.max_node_output_bytes.saturating_mul(2).saturating_add(1 << 20),
        })
    }
}
