//! The `crumb` binary: parse arguments and hand over to [`crumb::cli`].

fn main() -> std::process::ExitCode {
    crumb::cli::main()
}
