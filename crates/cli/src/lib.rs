//! The bench command line, a front end: turns arguments and profile files into the runner's
//! typed settings ([`settings`]), calls the runner (`bench-runner`) or the plan, turns signals
//! into the run's cancellation token, prints the consoles and progress, and picks the exit
//! code. The only crate that prints, exits or sets up logging. It does not drive the scheduler,
//! start the simulator or scrapers, or write a run's report files (the runner does).
//!
//! Each subcommand lives in its own module with its `Args` and its `run`. `bench plan`
//! ([`plan`]) is a front end too: the plan's configurations, servers, fleets and files are
//! `bench-plan`'s; the CLI resolves its settings once and runs each sweep as `bench sweep`
//! does.

// The argument structs' doc comments are `--help` text (clap prints them as written, and the
// help snapshots hold them): placeholders such as `<metric>` are meant literally there, not as
// HTML, so rustdoc's HTML check does not apply to this crate.
#![allow(rustdoc::invalid_html_tags)]

mod completions;
mod console_out;
mod error;
mod fidelity;
#[cfg(test)]
mod layout;
mod live;
mod merge_cmd;
mod mock_server;
mod plan;
mod progress;
mod progress_file;
mod report_cmd;
mod run;
pub mod settings;
mod shard;
mod shard_merge;
mod signals;
mod trace_cmd;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use error::UsageError;

/// Benchmark LLM inference servers: how much traffic can a deployment carry, and at what
/// latency?
#[derive(Debug, Parser)]
#[command(name = "bench", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Probe synchronous and maximum throughput, then run constant rates between them; with
    /// --data trace=FILE, replay the trace at increasing speed-ups and state the capacity as a
    /// multiple of the trace.
    Sweep(Box<run::SweepArgs>),
    /// Run any load shape (--rate-type KIND --rate LIST), or a YAML profile.
    Run(Box<run::RunArgs>),
    /// Size a fleet: start each server configuration (--serve, --params), sweep it, and state
    /// the replicas, GPUs and cost that serve --demand at the SLO, ranked.
    Plan(Box<plan::PlanCmdArgs>),
    /// Re-render saved runs (console, JSON, YAML, CSV, HTML), or compare two side by side.
    Report(report_cmd::ReportArgs),
    /// Merge the shard results of one distributed run (`bench run --shard I/N`) into one run.
    Merge(merge_cmd::MergeArgs),
    /// Inspect a trace without a server: rows, duration, rate, lengths, theoretical prefix-cache
    /// hit rate.
    Trace(trace_cmd::TraceArgs),
    /// Serve the built-in LLM server simulator (OpenAI and TGI APIs).
    MockServer(Box<mock_server::MockServerArgs>),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
    /// Print the man page (roff): `bench man > bench.1`.
    Man,
}

/// Runs the command line and returns the process exit code: 0 on success, 1 for a failed run,
/// 2 for usage and configuration errors.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2):
            // a usage error as one line naming the culprit, like every other bench error.
            use clap::error::ErrorKind;
            if e.exit_code() == 2 && e.kind() != ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            {
                // The lines before clap's usage block, joined: the error and its details.
                let text = e.render().to_string();
                let line: Vec<&str> = text
                    .lines()
                    .map(str::trim)
                    .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more"))
                    .filter(|l| !l.is_empty())
                    .collect();
                eprintln!("{} (see --help)", line.join(" "));
                return ExitCode::from(2);
            }
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let result = match cli.command {
        Command::Sweep(args) => run::sweep(*args),
        Command::Run(args) => run::run(*args),
        Command::Plan(args) => plan::run(*args),
        Command::Report(args) => report_cmd::run(args),
        Command::Merge(args) => merge_cmd::run(args),
        Command::Trace(args) => trace_cmd::run(args),
        Command::MockServer(args) => mock_server::run(*args),
        Command::Completions(args) => {
            completions::completions(&args, <Cli as clap::CommandFactory>::command())
        }
        Command::Man => completions::man(<Cli as clap::CommandFactory>::command()),
    };
    match result {
        Ok(code) => code,
        Err(err) => error::report(&err),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    use clap::{CommandFactory as _, Parser as _};

    use super::{Cli, Command};

    /// Every long flag and alias of every subcommand.
    fn cli_flags() -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let root = Cli::command();
        let mut cmds = vec![root.clone()];
        cmds.extend(root.get_subcommands().cloned());
        for c in cmds {
            for a in c.get_arguments() {
                if let Some(l) = a.get_long() {
                    out.insert(format!("--{l}"));
                }
                for al in a.get_all_aliases().unwrap_or_default() {
                    out.insert(format!("--{al}"));
                }
            }
        }
        out.insert("--help".into());
        out.insert("--version".into());
        out
    }

    /// Flags the docs name that belong to other tools (cargo, criterion, the peers, curl, the
    /// benchmark scripts), each with where it comes from.
    const NOT_OURS: [&str; 51] = [
        "--call-graph",                   // perf record (docs/performance.md)
        "--parallel",                     // llama-server's slots (docs/metrics.md)
        "--repo-type",                    // huggingface-cli download (docs/data.md)
        "--revision",                     // huggingface-cli download
        "--max-num-seqs",                 // vllm serve (docs/planning.md)
        "--enforce-eager",                // vllm serve (docs/planning.md, --serve-params)
        "--no-enforce-eager",             // vllm serve
        "--workspace",                    // cargo (docs/testing.md)
        "--all-targets",                  // cargo clippy
        "--check",                        // cargo fmt
        "--no-run",                       // cargo test
        "--lib",                          // cargo test --lib
        "--test",                         // cargo test --test
        "--workers",                      // .ci/lanes.py
        "--exact",                        // the test harness (.ci/lanes.py)
        "--nocapture",                    // the test harness (docs/simulator.md, "Replicas")
        "--timings",                      // cargo build
        "--reasoning-parser",             // vllm serve
        "--enable-prompt-tokens-details", // vllm serve
        "--embedding",                    // llama.cpp server (tests/it/llamacpp/serve.py)
        "--bench",                        // cargo bench
        "--example",                      // cargo run --example
        "--release",                      // cargo
        "--path",                         // cargo install --path
        "--warm-up-time",                 // criterion
        "--measurement-time",             // criterion
        "--no-build",                     // benches/scheduler.py
        "--rates",                        // benches/scheduler.py
        "--pairs",                        // benches/server_metrics_ab.py
        "--procs",                        // benches/streams.py
        "--repeats",                      // benches/ceiling.py
        "--bin",                          // cargo build --bin, benches/shards_scaling.py
        "--a",                            // benches/client_ab.py
        "--b",                            // benches/client_ab.py
        "--server",                       // benches/client_ab.py
        "--disable-console-interactive",  // guidellm
        "--seconds",                      // benches/scheduler.py
        "--streams",                      // benches/scheduler.py
        "--guidellm",                     // benches/scheduler.py
        "--guidellm-rates",               // benches/scheduler.py
        "--vllm",                         // benches/scheduler.py
        "--vllm-rates",                   // benches/scheduler.py
        "--http2-prior-knowledge",        // curl
        "--latency-correction",           // oha
        "--append-result",                // vLLM (named as what bench does not do)
        "--help",                         // every command
        "--compatibility",                // maturin build (docs/packaging.md)
        "--strip",                        // maturin build
        "--zig",                          // maturin build
        "--no-index",                     // pip install
        "--no-deps",                      // pip install, pip download
    ];

    fn docs() -> Vec<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("docs/")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        v.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"));
        v.sort();
        v
    }

    /// `--flag` words of `text` (not `---` rules, not inside other words).
    fn flags_in(text: &str) -> Vec<String> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i + 2 < b.len() {
            let starts = b[i] == b'-'
                && b[i + 1] == b'-'
                && b[i + 2].is_ascii_lowercase()
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-'));
            if starts {
                let mut j = i + 2;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'-') {
                    j += 1;
                }
                out.push(text[i..j].trim_end_matches('-').to_string());
                i = j;
            } else {
                i += 1;
            }
        }
        out
    }

    #[test]
    fn every_flag_the_docs_name_exists() {
        let have = cli_flags();
        // The detector itself: a made-up flag is found and is not in the CLI.
        assert_eq!(
            flags_in("use --no-such-flag, not --- or a--b"),
            ["--no-such-flag"]
        );
        assert!(!have.contains("--no-such-flag") && have.contains("--request-rate"));
        let mut missing = BTreeSet::new();
        for d in docs() {
            let text = std::fs::read_to_string(&d).expect("read doc");
            for f in flags_in(&text) {
                if !have.contains(&f) && !NOT_OURS.contains(&f.as_str()) {
                    missing.insert(format!(
                        "{f} ({})",
                        d.file_name().and_then(|n| n.to_str()).unwrap_or("?")
                    ));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "flags in the docs but not in the CLI: {missing:?}"
        );
        // And the other way: every flag of run/sweep is documented in docs/cli.md.
        let cli_md = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md"),
        )
        .expect("cli.md");
        let documented: BTreeSet<String> = flags_in(&cli_md).into_iter().collect();
        let run = Cli::command().find_subcommand("run").cloned().expect("run");
        let undocumented: Vec<String> = run
            .get_arguments()
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .filter(|f| f != "--help" && f != "--version" && !documented.contains(f))
            .collect();
        assert!(
            undocumented.is_empty(),
            "run flags missing from docs/cli.md: {undocumented:?}"
        );
    }

    /// Every flag `bench plan` adds to the sweep's is documented in docs/planning.md, with its
    /// aliases (that every flag the page names exists is `every_flag_the_docs_name_exists`).
    #[test]
    fn plan_flags_are_documented() {
        let md = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/planning.md"),
        )
        .expect("planning.md");
        let documented: BTreeSet<String> = flags_in(&md).into_iter().collect();
        let plan = Cli::command()
            .find_subcommand("plan")
            .cloned()
            .expect("plan");
        let sweep = Cli::command()
            .find_subcommand("sweep")
            .cloned()
            .expect("sweep");
        let names = |c: &clap::Command| -> BTreeSet<String> {
            c.get_arguments()
                .flat_map(|a| {
                    let aliases = a.get_all_aliases().unwrap_or_default();
                    a.get_long().into_iter().chain(aliases)
                })
                .map(|l| format!("--{l}"))
                .collect()
        };
        let (plan, sweep) = (names(&plan), names(&sweep));
        let own: Vec<&String> = plan
            .difference(&sweep)
            .filter(|f| !documented.contains(*f))
            .collect();
        assert!(
            own.is_empty(),
            "plan flags missing from docs/planning.md: {own:?}"
        );
    }

    /// `--help` of each subcommand, compared with `tests/expected/help-*.txt` (BLESS=1
    /// rewrites them): a change of the command line shows up in review.
    #[test]
    fn help_snapshots() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expected");
        for sub in [
            "run",
            "sweep",
            "plan",
            "report",
            "merge",
            "trace",
            "mock-server",
        ] {
            let mut c = Cli::command().term_width(100);
            c.build();
            let text = c
                .find_subcommand_mut(sub)
                .expect("subcommand")
                .render_long_help()
                .to_string();
            let path = dir.join(format!("help-{sub}.txt"));
            if std::env::var_os("BLESS").is_some() {
                std::fs::create_dir_all(&dir).expect("mkdir");
                std::fs::write(&path, &text).expect("write");
                continue;
            }
            let want = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (BLESS=1 creates it)", path.display()));
            assert_eq!(text, want, "{sub} --help changed; BLESS=1 to accept");
        }
    }

    /// The peers' spellings parse (clap aliases) and resolve to bench's settings.
    #[test]
    fn peer_aliases_parse_and_resolve() {
        let cli = Cli::try_parse_from([
            "bench",
            "run",
            "--base-url",
            "http://h:1",
            "--tokenizer",
            "tok.json",
            "--output-path",
            "a.json",
            "--random-seed",
            "3",
            "--disable-progress",
            "--backend-type",
            "openai_http",
            "--request-rate",
            "2",
            "--num-prompts",
            "20",
            "--num-warmups",
            "5",
            "--cooldown-percent",
            "10",
            "--disable-console-outputs",
            "--save-detailed",
            "--header",
            "A=b",
        ])
        .expect("vLLM and guidellm flags parse");
        let Command::Run(args) = cli.command else {
            panic!("run")
        };
        let s =
            crate::settings::resolve(&args.common, args.rate_type.as_deref(), &args.rate, false)
                .expect("resolves");
        assert_eq!(s.target.targets, ["http://h:1"]);
        assert_eq!(s.data.processor.as_deref(), Some("tok.json"));
        assert_eq!(s.report.output, vec![std::path::PathBuf::from("a.json")]);
        assert_eq!(s.load.build.seed, 3);
        assert!(s.report.quiet && s.report.save_records);
        assert_eq!(s.report.console, crate::settings::Console::None);
        assert_eq!(
            s.target.backend,
            bench_worker::BackendKind::OpenAiCompletions
        );
        assert_eq!(s.load.rate, vec![2.0]);
        // --num-warmups 5 on top of --num-prompts 20: 25 requests, the first 5 excluded.
        assert_eq!(s.load.limits.max_requests, Some(25));
        assert_eq!(s.load.warmup, Some(bench_profile::Transient::Requests(5)));
        assert_eq!(
            s.load.cooldown,
            Some(bench_profile::Transient::Fraction(0.1))
        );
        assert_eq!(s.target.headers, vec![("A".to_string(), "b".to_string())]);
        let cli = Cli::try_parse_from(["bench", "sweep", "--mock", "--scenario", "/no/such.yaml"])
            .expect("parses");
        let Command::Sweep(args) = cli.command else {
            panic!("sweep")
        };
        let e = crate::settings::resolve(&args.common, None, &[], true).expect_err("no file");
        assert!(format!("{e:#}").contains("/no/such.yaml"), "{e:#}");
    }
}
