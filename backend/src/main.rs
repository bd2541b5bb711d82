//! `trellis serve | migrate | user add | user passwd` (and `sandbox-worker`, which the server starts).

fn main() -> std::process::ExitCode {
    trellis::cli::main()
}
