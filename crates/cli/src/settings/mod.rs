//! Settings of `bench sweep` / `bench run`: command-line flags, profile files and defaults,
//! resolved and validated in one place ([`resolve`]) into the runner's typed
//! [`Settings`]: CLI > file > defaults.
//!
//! - `args.rs`: the flags (clap), grouped as `--help` shows them;
//! - `file.rs`: what a profile file may hold;
//! - `peers.rs`: vLLM's and guidellm's spellings translated into bench's;
//! - `target.rs`, `request.rs`, `load.rs`, `report.rs`: each group resolved into its typed
//!   settings; `show.rs`: the settings written back as a profile (`--show-config`).
//!
//! Everything is parsed once here; the run uses the typed [`Settings`].

mod args;
mod cancel;
mod data;
mod file;
mod load;
mod models;
mod peers;
pub mod plan;
mod ramp;
mod report;
mod request;
pub mod show;
mod target;
mod vllm_data;

use std::path::Path;

use anyhow::Context as _;

pub use args::{
    CommonArgs, ConsoleArg, DataArgs, LoadArgs, PeerArgs, ReportArgs, RequestArgs, TargetArgs,
};
pub use bench_runner::settings::{
    Console, DataSettings, LoadSettings, MixSettings, Repeat, ReportSettings, RequestSettings,
    Sampling, Settings, TargetSettings, VllmExtensions, VllmResult, DEFAULT_DATA,
    DEFAULT_MAX_SECONDS, DEFAULT_MOCK_MAX_SECONDS,
};
pub use file::{load_file, DataValue, FileSettings, RateList};
pub use load::parse_rates;
pub use show::ToFile;

use crate::UsageError;

/// What the resolvers of each group read: the command line (peer flags translated), the
/// profile file and its name.
pub(crate) struct Sources<'a> {
    pub cli: &'a CommonArgs,
    pub file: &'a FileSettings,
    pub profile: Option<&'a Path>,
}

impl Sources<'_> {
    /// Where a setting came from, as the user wrote it, for error messages: `--flag` when the
    /// command line gave it, else `FILE: key` (the profile's key, `_` for `-`).
    pub fn origin(&self, flag: &str, from_cli: bool) -> String {
        match self.profile {
            Some(p) if !from_cli => format!("{}: {}", p.display(), flag.replace('-', "_")),
            _ => format!("--{flag}"),
        }
    }
}

/// A YAML scalar as the text a flag would take.
fn yaml_text(v: &serde_yaml::Value) -> Option<String> {
    match v {
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        serde_yaml::Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// The profile file the flags name, loaded, with its name (`None` without one).
pub fn profile_of(cli: &CommonArgs) -> anyhow::Result<Option<(std::path::PathBuf, FileSettings)>> {
    let t = peers::translate(cli, None, &[])?;
    t.profile_file
        .map(|p| load_file(&p).map(|f| (p.clone(), f)))
        .transpose()
}

pub(crate) fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError::new(msg).into()
}

/// Combines the command line (`cli`, plus `rate_type` / `rate` of `bench run`, or a forced
/// sweep) with the profile file and the defaults, and validates everything. The only place
/// settings are decided.
pub fn resolve(
    cli: &CommonArgs,
    cli_rate_type: Option<&str>,
    cli_rate: &[String],
    force_sweep: bool,
) -> anyhow::Result<Settings> {
    let run = Run {
        rate_type: cli_rate_type,
        rate: cli_rate,
        force_sweep,
        launched: false,
    };
    Ok(resolve_run(cli, run)?.0)
}

/// The base settings of a plan's sweeps (`bench plan`), resolved once as `bench sweep`
/// resolves its flags and profile, with no file of the user's (the plan's `--output` files are
/// the plan's; each configuration's run writes its own `run.json`) and, when `launched` (a
/// serve command), the target only as the command line gives it (each server's URL is set
/// once it listens). The plan applies each configuration to them ([`bench_plan::linked`]).
pub fn resolve_plan_base(cli: &CommonArgs, launched: bool) -> anyhow::Result<bench_plan::Base> {
    let mut cli = cli.clone();
    cli.report.output = Vec::new();
    cli.report.no_output = true;
    let run = Run {
        rate_type: None,
        rate: &[],
        force_sweep: true,
        launched,
    };
    let (settings, given) = resolve_run(&cli, run)?;
    Ok(bench_plan::Base { settings, given })
}

/// What the command asks of [`resolve_run`]: `bench run`'s rate type and rates, a forced
/// sweep, or a plan's launched servers (no target needed).
struct Run<'a> {
    rate_type: Option<&'a str>,
    rate: &'a [String],
    force_sweep: bool,
    launched: bool,
}

/// [`resolve`], with what the user gave of the settings a plan's link may change.
fn resolve_run(cli: &CommonArgs, run: Run<'_>) -> anyhow::Result<(Settings, bench_plan::Given)> {
    let (cli_rate_type, cli_rate, force_sweep) = (run.rate_type, run.rate, run.force_sweep);
    let t = peers::translate(cli, cli_rate_type, cli_rate)?;
    let file = match &t.profile_file {
        Some(p) => load_file(p)?,
        None => FileSettings::default(),
    };
    let src = Sources {
        cli: &t.cli,
        file: &file,
        profile: t.profile_file.as_deref(),
    };
    let target = target::resolve_for(&src, |k| std::env::var(k).ok(), run.launched)?;
    let (data, spec) = resolve_data(&src)?;
    check_data_for_backend(target.backend, &spec, &src)?;
    let trace = matches!(spec, bench_loader::DataSpec::Trace(_));
    let mut load = load::resolve(
        &src,
        t.rate_type.as_deref(),
        &t.rate,
        force_sweep,
        target.mock,
        trace,
    )?;
    load.cancellation = cancel::given(&src, spec.sessions())?;
    if load.repeat.trials > 1 && spec.sessions() {
        return Err(usage(format!(
            "{}: sessions (turns=, conversation files) cannot be repeated yet: their per-turn summaries keep no histograms to pool",
            src.origin("repeat", t.cli.load.repeat.is_some())
        )));
    }
    let request = request::resolve(&src)?;
    if !request.stream && target.backend == bench_worker::BackendKind::Tgi {
        return Err(usage(format!(
            "{}: only the openai-completions, openai-chat, openai-responses and anthropic-messages backends can answer unstreamed, not tgi",
            if t.cli.request.no_stream {
                "--no-stream".to_string()
            } else {
                src.origin("stream", false)
            }
        )));
    }
    let report = report::resolve(&src, load.rate_type, target.backend.pooling())?;
    let given = bench_plan::Given {
        max_seconds: t.cli.load.max_seconds.or(file.max_seconds).is_some(),
        precision_budget: t
            .cli
            .load
            .precision_budget
            .or(file.precision_budget)
            .is_some(),
    };
    let settings = Settings {
        target,
        request,
        data,
        load,
        report,
    };
    Ok((settings, given))
}

/// `--data` (guidellm's JSON form accepted), `--data-column`, `--processor`. A bare `.txt`
/// path on the command line over a profile whose data gives `prompt_tokens` is sliced as a
/// book at that length (the tgi-book profile). Also says whether the data are a trace.
fn resolve_data(src: &Sources<'_>) -> anyhow::Result<(DataSettings, bench_loader::DataSpec)> {
    let file_data = match &src.file.data {
        Some(d) => Some(d.to_arg().map_err(|e| {
            let file = src
                .profile
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            usage(format!("{file}: {e}"))
        })?),
        None => None,
    };
    let cli_data = match &src.cli.data.data {
        Some(d) => Some(data::from_json_form(d).map_err(|e| usage(format!("--data: {e}")))?),
        None => None,
    };
    let data = match (cli_data, file_data) {
        (Some(c), Some(f)) => data::over_profile(&c, &f),
        (Some(c), None) => c,
        (None, Some(f)) => f,
        (None, None) => DEFAULT_DATA.to_string(),
    };
    let data_column = src
        .cli
        .data
        .data_column
        .clone()
        .or(src.file.data_column.clone());
    let spec = bench_runner::data::parse(&data, data_column.as_deref())?;
    let settings = DataSettings {
        data,
        data_column,
        processor: src
            .cli
            .data
            .processor
            .clone()
            .or(src.file.processor.clone()),
    };
    Ok((settings, spec))
}

/// The data fit the backend: `batch_size` more than 1 only for the pooling backends, at least
/// 2 for rerank (a query and a document), no sessions for the pooling backends, images and
/// tools only for chat.
fn check_data_for_backend(
    backend: bench_worker::BackendKind,
    spec: &bench_loader::DataSpec,
    src: &Sources<'_>,
) -> anyhow::Result<()> {
    let data = src.origin("data", src.cli.data.data.is_some());
    let batch = spec.batch_size();
    if !backend.pooling() && batch > 1 {
        return Err(usage(format!(
            "{data}: batch_size={batch} applies to the openai-embeddings, rerank and cohere-rerank backends, not {backend}"
        )));
    }
    if backend.pooling() && spec.sessions() {
        return Err(usage(format!(
            "{data}: sessions (turns=, conversation files) do not apply to the {backend} backend"
        )));
    }
    let images = spec.synthetic_images().is_some()
        || matches!(spec, bench_loader::DataSpec::File(f) if f.image_column.is_some());
    if images && backend != bench_worker::BackendKind::OpenAiChat {
        return Err(usage(format!(
            "{data}: images apply to the openai-chat backend, not {backend}"
        )));
    }
    let tools = matches!(spec, bench_loader::DataSpec::Synthetic(c) if c.tools.is_some());
    if tools && backend != bench_worker::BackendKind::OpenAiChat {
        return Err(usage(format!(
            "{data}: tools (tools=, tools_file=) apply to the openai-chat backend, not {backend}"
        )));
    }
    if batch < backend.min_inputs() {
        return Err(usage(format!(
            "{data}: the {backend} backend sends a query and its documents, so it needs batch_size >= {} (got {batch})",
            backend.min_inputs()
        )));
    }
    Ok(())
}

/// Loads and resolves a profile file as `bench run --profile FILE` would (with `--mock` when
/// the file names no target), for tests and `--show-config`.
pub fn resolve_file(path: &Path) -> anyhow::Result<Settings> {
    let file = load_file(path)?;
    let mut cli = CommonArgs {
        profile: Some(path.display().to_string()),
        ..CommonArgs::default()
    };
    cli.target.mock = file.target.is_none() && file.mock.is_none();
    resolve(&cli, None, &[], false).with_context(|| format!("profile {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_profile::{RateType, Transient};
    use std::path::PathBuf;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bench-settings-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    fn mock_args() -> CommonArgs {
        let mut a = CommonArgs::default();
        a.target.mock = true;
        a
    }

    fn is_usage(e: &anyhow::Error) -> bool {
        e.chain().any(|c| c.downcast_ref::<UsageError>().is_some())
    }

    #[test]
    fn cli_overrides_file_overrides_defaults() {
        let d = tmpdir("prec");
        let p = write(
            &d,
            "p.yaml",
            "target: http://127.0.0.1:9\nrate_type: constant\nrate: [1, 2]\nmax_seconds: 20\nwarmup: 0.1\n",
        );
        let mut cli = CommonArgs {
            profile: Some(p.display().to_string()),
            ..CommonArgs::default()
        };
        cli.load.max_seconds = Some(7.0);
        let s = resolve(&cli, None, &[], false).expect("valid");
        assert_eq!(s.load.limits.max_seconds, Some(7.0), "CLI wins");
        assert_eq!(s.load.rate, vec![1.0, 2.0], "file fills in");
        assert_eq!(s.load.warmup, Some(Transient::Fraction(0.1)));
        assert_eq!(s.report.console, Console::Vllm, "default");
        let s = resolve(&cli, None, &["4".into()], false).expect("valid");
        assert_eq!(s.load.rate, vec![4.0]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn ramp_ups_from_keys_and_flags_load_back_from_show_config() {
        use bench_core::{Ramp, RampOver, RampShape};
        let d = tmpdir("ramp");
        let p = write(
            &d,
            "p.yaml",
            "mock: true\nrate_type: poisson\nrate: [20]\nmax_seconds: 30\nwarmup: 5s\nrampup_duration: 10s\nramp_up_strategy: exponential\nramp_up_start_rps: 2\n",
        );
        let cli = CommonArgs {
            profile: Some(p.display().to_string()),
            ..CommonArgs::default()
        };
        let s = resolve(&cli, None, &[], false).expect("valid");
        let want = Ramp {
            shape: RampShape::Exponential,
            over: RampOver::Seconds(10.0),
            from_rps: 2.0,
            in_window: false,
        };
        assert_eq!(s.load.ramp, Some(want));
        assert_eq!(
            s.load.warmup,
            Some(Transient::Seconds(15.0)),
            "after the ramp"
        );
        // vLLM's spelling: a Poisson load at the end rate, ramped by request.
        let mut v = mock_args();
        v.load.ramp_up_strategy = Some("linear".into());
        v.load.ramp_up_start_rps = Some(1.0);
        v.load.ramp_up_end_rps = Some(8.0);
        v.load.max_requests = Some(50);
        let vs = resolve(&v, None, &[], false).expect("valid");
        assert_eq!(vs.load.rate_type, RateType::Poisson);
        assert_eq!(vs.load.rate, vec![8.0]);
        assert_eq!(vs.load.ramp.map(|r| r.over), Some(RampOver::Requests));
        // --show-config writes keys that resolve to the same load.
        for (name, settings) in [("time", &s), ("request", &vs)] {
            let yaml = serde_yaml::to_string(&settings.to_file()).expect("yaml");
            let back = write(&d, &format!("{name}.yaml"), &yaml);
            let again = resolve_file(&back).expect("loads back");
            assert_eq!(again.load, settings.load, "{name}:\n{yaml}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_file_and_key() {
        let d = tmpdir("bad");
        let p = write(&d, "bad.yaml", "target: http://x\nmax_secs: 3\n");
        let e = load_file(&p).expect_err("unknown key");
        let msg = format!("{e:#}");
        assert!(
            msg.contains("bad.yaml") && msg.contains("max_secs"),
            "{msg}"
        );
        assert!(is_usage(&e));
        let p = write(&d, "bad2.yaml", "target: http://x\nmax_seconds: soon\n");
        let msg = format!("{:#}", load_file(&p).expect_err("bad value"));
        assert!(
            msg.contains("bad2.yaml") && msg.contains("max_seconds"),
            "{msg}"
        );
        let p = write(&d, "bad3.yaml", "target: http://x\nrate_type: fast\n");
        let cli = CommonArgs {
            profile: Some(p.display().to_string()),
            ..CommonArgs::default()
        };
        let e = resolve(&cli, None, &[], false).expect_err("bad kind");
        assert!(is_usage(&e));
        assert!(format!("{e:#}").contains("fast"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn usage_errors() {
        let none = CommonArgs::default();
        assert!(is_usage(
            &resolve(&none, Some("constant"), &["1".into()], false).expect_err("no target")
        ));
        let mock = mock_args();
        for (kind, rate) in [
            ("constant", vec![]),
            ("constant", vec!["x".to_string()]),
            ("concurrent", vec!["1.5".to_string()]),
            ("warp", vec![]),
        ] {
            let e = resolve(&mock, Some(kind), &rate, false).expect_err(kind);
            assert!(is_usage(&e), "{kind}");
        }
        let mut bad_warm = mock_args();
        bad_warm.load.warmup = Some("-3".into());
        assert!(resolve(&bad_warm, None, &[], true).is_err());
        let mut bad_out = mock_args();
        bad_out.report.output = vec!["x.txt".into()];
        assert!(is_usage(
            &resolve(&bad_out, None, &[], true).expect_err("bad ext")
        ));
    }

    /// The runner's starting point for a library caller is what `bench sweep --mock` resolves
    /// to: the two cannot drift apart.
    #[test]
    fn the_runners_mock_sweep_is_what_bench_sweep_mock_resolves_to() {
        let s = resolve(&mock_args(), None, &[], true).expect("valid");
        assert_eq!(s, Settings::mock_sweep());
    }

    #[test]
    fn mock_defaults_make_a_short_sweep() {
        let mock = mock_args();
        let s = resolve(&mock, None, &[], true).expect("valid");
        assert_eq!(s.load.rate_type, RateType::Sweep);
        assert_eq!(s.load.limits.max_seconds, Some(DEFAULT_MOCK_MAX_SECONDS));
        assert_eq!(s.load.profile.len(), 10);
        assert_eq!(s.report.console, Console::Guidellm);
        assert_eq!(s.data.data, DEFAULT_DATA);
        // num-prompts bounds a run by count instead of time.
        let mut n = mock_args();
        n.load.num_prompts = Some(100);
        let s = resolve(&n, Some("poisson"), &["4".into()], false).expect("valid");
        assert_eq!(s.load.limits.max_requests, Some(100));
        assert_eq!(s.load.limits.max_seconds, None);
        assert!(show::text(&s).contains("max_requests: 100"));
    }

    #[test]
    fn data_mapping_json_form_and_book_over_profile() {
        let d = tmpdir("data");
        let p = write(
            &d,
            "map.yaml",
            "mock: true\nrate_type: synchronous\nmax_requests: 3\ndata: {prompt_tokens: 64, output_tokens: 8}\n",
        );
        let s = resolve_file(&p).expect("a data mapping loads");
        assert_eq!(s.data.data, "output_tokens=8,prompt_tokens=64");
        let bad = write(
            &d,
            "badmap.yaml",
            "mock: true\nrate_type: synchronous\ndata: {prompt_tokns: 64}\n",
        );
        let e = format!("{:#}", resolve_file(&bad).expect_err("unknown data key"));
        assert!(e.contains("prompt_tokns"), "{e}");
        // guidellm's JSON form.
        let mut cli = mock_args();
        cli.data.data = Some(r#"{"prompt_tokens": 256, "output_tokens": 128}"#.into());
        let s = resolve(&cli, Some("synchronous"), &[], false).expect("json data");
        assert_eq!(s.data.data, "output_tokens=128,prompt_tokens=256");
        // A book on the command line over the tgi-book profile is sliced at its length.
        let book = write(
            &d,
            "book.txt",
            "Call me Ishmael. Some years ago, never mind how long.\n",
        );
        let tgi =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles/tgi-book.yaml");
        let mut cli = mock_args();
        cli.profile = Some(tgi.display().to_string());
        cli.data.data = Some(book.display().to_string());
        let s = resolve(&cli, None, &[], false).expect("book");
        assert_eq!(
            s.data.data,
            format!("path={},format=book,prompt_tokens=10000", book.display())
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn peer_flags_translate_to_bench_settings() {
        // The Done-when command of issue 12.
        let mut cli = CommonArgs::default();
        cli.target.target = vec!["http://127.0.0.1:8000".into()];
        cli.peers.request_rate = Some("5".into());
        cli.load.num_prompts = Some(100);
        cli.peers.dataset_name = Some("random".into());
        cli.peers.random_input_len = Some(1024);
        cli.peers.random_output_len = Some(128);
        cli.report.save_result = true;
        let s = resolve(&cli, None, &[], false).expect("vLLM's command");
        assert_eq!(s.load.rate_type, RateType::Poisson);
        assert_eq!(s.load.rate, vec![5.0]);
        assert_eq!(s.load.limits.max_requests, Some(100));
        assert_eq!(s.load.limits.max_seconds, None);
        assert_eq!(s.data.data, "input_len=1024,output_len=128");
        assert!(s.report.save_result.is_some());
        // inf is a burst of --num-prompts (vLLM's default 1000 when not given).
        let mut inf = mock_args();
        inf.peers.request_rate = Some("inf".into());
        let s = resolve(&inf, None, &[], false).expect("inf");
        assert_eq!(
            (s.load.rate_type, s.load.rate.clone()),
            (RateType::Burst, vec![1000.0])
        );
        // --host/--port, --profile KIND, --warmup-percent, --request-type.
        let mut g = CommonArgs::default();
        g.peers.host = Some("10.0.0.1".into());
        g.peers.port = Some(9000);
        g.profile = Some("sweep".into());
        g.peers.warmup_percent = Some(0.1);
        g.peers.request_type = Some("chat_completions".into());
        let s = resolve(&g, None, &[], false).expect("guidellm flags");
        assert_eq!(s.target.targets, ["http://10.0.0.1:9000"]);
        assert_eq!(s.load.rate_type, RateType::Sweep);
        assert_eq!(s.load.warmup, Some(Transient::Fraction(0.1)));
        assert_eq!(s.target.backend, bench_worker::BackendKind::OpenAiChat);
        // --profile that is neither a file nor a kind, and conflicting spellings.
        let mut bad = mock_args();
        bad.profile = Some("nosuch".into());
        assert!(is_usage(
            &resolve(&bad, None, &[], false).expect_err("neither")
        ));
        let mut both = mock_args();
        both.peers.request_rate = Some("4".into());
        assert!(is_usage(
            &resolve(&both, Some("constant"), &["1".into()], false).expect_err("both")
        ));
    }

    #[test]
    fn api_key_falls_back_to_openai_api_key_and_headers_parse() {
        let cli = mock_args();
        let file = FileSettings::default();
        let src = Sources {
            cli: &cli,
            file: &file,
            profile: None,
        };
        let t = target::resolve(&src, |k| {
            (k == "OPENAI_API_KEY").then(|| "sk-x".to_string())
        })
        .expect("ok");
        assert_eq!(t.api_key.as_deref(), Some("sk-x"));
        // Anthropic's Messages API reads its own variable, never OpenAI's.
        let mut anthropic = mock_args();
        anthropic.target.backend = Some("anthropic-messages".into());
        let src = Sources {
            cli: &anthropic,
            file: &file,
            profile: None,
        };
        let t = target::resolve(&src, |k| match k {
            "ANTHROPIC_API_KEY" => Some("sk-ant".to_string()),
            "OPENAI_API_KEY" => Some("sk-x".to_string()),
            _ => None,
        })
        .expect("ok");
        assert_eq!(t.api_key.as_deref(), Some("sk-ant"));
        let t = target::resolve(&src, |k| {
            (k == "OPENAI_API_KEY").then(|| "sk-x".to_string())
        })
        .expect("ok");
        assert_eq!(t.api_key, None);
        let mut given = mock_args();
        given.target.api_key = Some("sk-flag".into());
        given.target.headers = vec!["X-A: 1".into(), "X-B=two=2".into()];
        let src = Sources {
            cli: &given,
            file: &file,
            profile: None,
        };
        let t = target::resolve(&src, |_| Some("sk-x".to_string())).expect("ok");
        assert_eq!(t.api_key.as_deref(), Some("sk-flag"), "the flag wins");
        assert_eq!(
            t.headers,
            vec![("X-A".into(), "1".into()), ("X-B".into(), "two=2".into())]
        );
        let mut bad = mock_args();
        bad.target.headers = vec!["no separator".into()];
        let src = Sources {
            cli: &bad,
            file: &file,
            profile: None,
        };
        assert!(target::resolve(&src, |_| None).is_err());
        let mut t0 = mock_args();
        t0.target.request_timeout = Some(0.0);
        let src = Sources {
            cli: &t0,
            file: &file,
            profile: None,
        };
        assert!(is_usage(
            &target::resolve(&src, |_| None).expect_err("zero timeout")
        ));
    }
}
