//! `trellis serve | migrate | user | backup | secrets` (and `sandbox-worker`, which the server
//! starts), and the client commands.

fn main() -> std::process::ExitCode {
    trellis::cli::main()
}
