//! The `bench` binary: a thin shell around [`bench_cli`].

fn main() -> std::process::ExitCode {
    bench_cli::main()
}
