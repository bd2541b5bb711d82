//! `trellis serve | migrate | user add | user passwd`.

fn main() -> std::process::ExitCode {
    trellis::cli::main()
}
