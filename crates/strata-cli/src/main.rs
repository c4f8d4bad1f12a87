//! The `strata` binary: the command line of the `strata_cli` library (`lib.rs`).

use std::process::ExitCode;

fn main() -> ExitCode {
    strata_cli::main_with_args(std::env::args_os().collect())
}
