//! The load group: rate type, rates, the benchmarks, their limits, warmup and cooldown.

use bench_core::Slo;
use bench_profile::{
    BuildOptions, Limits, Profile, RateType, SweepMode, Transient, DEFAULT_SLO_TOLERANCE,
};

use super::file::RateList;
use super::{usage, LoadSettings, Repeat, Sources, DEFAULT_MAX_SECONDS, DEFAULT_MOCK_MAX_SECONDS};
use crate::UsageError;

/// The most trials `--repeat` takes.
pub const MAX_TRIALS: u32 = 1000;

/// `--repeat` (1 to [`MAX_TRIALS`]) and `--repeat-until` (a percent above 0 and below 100,
/// `2%`, or a fraction, `0.02`; it needs `--repeat` of at least 3), from the command line
/// or the profile's `repeat` / `repeat_until`.
fn repeat(src: &Sources<'_>) -> anyhow::Result<Repeat> {
    let (cli, file) = (&src.cli.load, src.file);
    let text = |c: &Option<String>, f: &Option<serde_yaml::Value>| {
        c.clone()
            .or_else(|| f.as_ref().map(|v| super::yaml_text(v).unwrap_or_default()))
    };
    let n_from = src.origin("repeat", cli.repeat.is_some());
    let trials = match text(&cli.repeat, &file.repeat) {
        None => 1,
        Some(t) => match t.trim().parse::<u32>() {
            Ok(n) if (1..=MAX_TRIALS).contains(&n) => n,
            _ => {
                return Err(usage(format!(
                    "{n_from} {t}: must be a whole number of trials from 1 to {MAX_TRIALS}"
                )))
            }
        },
    };
    let u_from = src.origin("repeat-until", cli.repeat_until.is_some());
    let until = match text(&cli.repeat_until, &file.repeat_until) {
        None => None,
        Some(t) => {
            let v = match t.trim().strip_suffix('%') {
                Some(p) => p.trim().parse::<f64>().ok().map(|p| p / 100.0),
                None => t.trim().parse::<f64>().ok(),
            };
            match v {
                Some(v) if v > 0.0 && v < 1.0 => Some(v),
                _ => {
                    return Err(usage(format!(
                        "{u_from} {t}: must be a percent above 0 and below 100 (e.g. 2%)"
                    )))
                }
            }
        }
    };
    if until.is_some() && trials < 3 {
        return Err(usage(format!(
            "{u_from} stops after at least 3 trials: give {n_from} N with N >= 3, the most trials to run"
        )));
    }
    Ok(Repeat { trials, until })
}

/// Parses `1,2.5,4` (also repeated flags) into numbers.
pub fn parse_rates(parts: &[String]) -> Result<Vec<f64>, UsageError> {
    let mut out = Vec::new();
    for p in parts {
        for x in p.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            let v: f64 = x
                .parse()
                .map_err(|_| UsageError::new(format!("--rate: `{x}` is not a number")))?;
            out.push(v);
        }
    }
    Ok(out)
}

fn rate_type(
    src: &Sources<'_>,
    cli_rate_type: Option<&str>,
    force_sweep: bool,
    trace: bool,
) -> anyhow::Result<RateType> {
    if force_sweep {
        if let Some(rt) = src.file.rate_type.as_deref().filter(|r| *r != "sweep") {
            return Err(usage(format!(
                "`bench sweep` runs a sweep but the profile says rate_type: {rt}; use `bench run --profile`"
            )));
        }
        if cli_rate_type.is_some_and(|r| r != "sweep") {
            return Err(usage("`bench sweep` takes no --rate-type; use `bench run`"));
        }
        return Ok(RateType::Sweep);
    }
    let speedup = !src.cli.load.speedup.is_empty() || src.file.speedup.is_some();
    match cli_rate_type.or(src.file.rate_type.as_deref()) {
        // A trace replays at its recorded times unless another load is asked for.
        None if speedup || trace => Ok(RateType::Trace),
        Some(s) => s
            .parse::<RateType>()
            .map_err(|e| usage(format!("{}: {e}", src.origin("rate-type", cli_rate_type.is_some())))),
        None => Err(usage(
            "`bench run` needs --rate-type (synchronous, concurrent, throughput, constant, poisson, burst, trace, sweep), vLLM's --request-rate, --speedup, or a --profile that sets rate_type",
        )),
    }
}

fn rates(src: &Sources<'_>, cli_rate: &[String], rate_type: RateType) -> anyhow::Result<Vec<f64>> {
    let speedup = &src.cli.load.speedup;
    if !speedup.is_empty() || src.file.speedup.is_some() {
        if rate_type != RateType::Trace {
            return Err(usage(format!(
                "{}: applies to --rate-type trace, not {rate_type}",
                src.origin("speedup", !speedup.is_empty())
            )));
        }
        if !cli_rate.is_empty() || src.file.rate.is_some() {
            return Err(usage(format!(
                "{} and rate both give the speed-ups of a trace; give one",
                src.origin("speedup", !speedup.is_empty())
            )));
        }
        if !speedup.is_empty() {
            return parse_rates(speedup)
                .map_err(|e| usage(e.to_string().replacen("--rate", "--speedup", 1)));
        }
        return list(src, &src.file.speedup, "speedup");
    }
    if !cli_rate.is_empty() {
        return Ok(parse_rates(cli_rate)?);
    }
    list(src, &src.file.rate, "rate")
}

/// A profile's list of numbers (`rate:` or `speedup:`).
fn list(src: &Sources<'_>, value: &Option<RateList>, key: &str) -> anyhow::Result<Vec<f64>> {
    Ok(match value {
        None => Vec::new(),
        Some(RateList::One(x)) => vec![*x],
        Some(RateList::Many(v)) => v.clone(),
        Some(RateList::Text(s)) => parse_rates(std::slice::from_ref(s))
            .map_err(|e| usage(format!("{}: {e}", src.origin(key, false))))?,
    })
}

fn build_options(src: &Sources<'_>, rate_type: RateType) -> anyhow::Result<BuildOptions> {
    let (c, f) = (&src.cli.load, src.file);
    let sweep_poisson = match c
        .sweep_rate_type
        .as_deref()
        .or(f.sweep_rate_type.as_deref())
    {
        None | Some("constant") => false,
        Some("poisson") => true,
        Some(other) => {
            return Err(usage(format!(
                "{}: expected constant or poisson, got `{other}`",
                src.origin("sweep-rate-type", c.sweep_rate_type.is_some())
            )))
        }
    };
    let (slo, slo_tolerance) = slo(src, rate_type)?;
    let slo_precision = slo_precision(src, slo.as_ref())?;
    let capacity_precision = capacity_precision(src, rate_type)?;
    Ok(BuildOptions {
        max_concurrency: c.max_concurrency.or(f.max_concurrency),
        burstiness: c.burstiness.or(f.burstiness).unwrap_or(1.0),
        seed: c.seed.or(f.seed).unwrap_or(42),
        sweep_size: c.sweep_size.or(f.sweep_size).unwrap_or(10),
        sweep_poisson,
        sweep_mode: sweep_mode(src)?,
        slo,
        slo_tolerance,
        slo_precision,
        capacity_precision,
    })
}

/// `--capacity-precision` (docs/metrics.md, "The capacity's precision"): a target in
/// (0%, 100%), for a sweep.
fn capacity_precision(src: &Sources<'_>, rate_type: RateType) -> anyhow::Result<Option<f64>> {
    let (c, f) = (&src.cli.load, src.file);
    let Some(text) = c
        .capacity_precision
        .clone()
        .or(f.capacity_precision.as_ref().map(|p| p.text()))
    else {
        return Ok(None);
    };
    let origin = src.origin("capacity-precision", c.capacity_precision.is_some());
    if rate_type != RateType::Sweep {
        return Err(usage(format!(
            "{origin}: narrows a sweep's maximum; the rate type is {rate_type}"
        )));
    }
    let target = text
        .parse::<bench_core::Target>()
        .map_err(|e| usage(format!("{origin}: {e}")))?;
    Ok(Some(target.0))
}

/// `--slo-precision` (docs/metrics.md, "The SLO answer's precision"): a target in (0%, 100%),
/// with an SLO to narrow.
fn slo_precision(src: &Sources<'_>, slo: Option<&Slo>) -> anyhow::Result<Option<f64>> {
    let (c, f) = (&src.cli.load, src.file);
    let Some(text) = c
        .slo_precision
        .clone()
        .or(f.slo_precision.as_ref().map(|p| p.text()))
    else {
        return Ok(None);
    };
    let origin = src.origin("slo-precision", c.slo_precision.is_some());
    let Some(slo) = slo else {
        return Err(usage(format!(
            "{origin}: narrows the SLO answer; give --slo too"
        )));
    };
    if !bench_report::slo_has_intervals(slo) {
        return Err(usage(format!(
            "{origin}: the SLO `{slo}` has a bound without an interval (only medians, p90 and p99 of ttft, itl, tpot and e2el have one; docs/metrics.md, \"Intervals\")"
        )));
    }
    let target = text
        .parse::<bench_core::Target>()
        .map_err(|e| usage(format!("{origin}: {e}")))?;
    Ok(Some(target.0))
}

fn sweep_mode(src: &Sources<'_>) -> anyhow::Result<SweepMode> {
    match src
        .cli
        .load
        .sweep_mode
        .as_deref()
        .or(src.file.sweep_mode.as_deref())
    {
        None | Some("adaptive") => Ok(SweepMode::Adaptive),
        Some("guidellm") => Ok(SweepMode::Guidellm),
        Some(other) => Err(usage(format!(
            "{}: expected adaptive or guidellm, got `{other}`",
            src.origin("sweep-mode", src.cli.load.sweep_mode.is_some())
        ))),
    }
}

/// The SLO a sweep searches for, and the search's tolerance.
fn slo(src: &Sources<'_>, rate_type: RateType) -> anyhow::Result<(Option<Slo>, f64)> {
    let (c, f) = (&src.cli.load, src.file);
    let slo = match c.slo.as_deref().or(f.slo.as_deref()) {
        None => None,
        Some(text) => Some(
            text.parse::<Slo>()
                .map_err(|e| usage(format!("{}: {e}", src.origin("slo", c.slo.is_some()))))?,
        ),
    };
    if slo.is_some() && rate_type != RateType::Sweep {
        return Err(usage(format!(
            "{}: the SLO search runs in a sweep (`bench sweep` or --rate-type sweep)",
            src.origin("slo", c.slo.is_some())
        )));
    }
    let tolerance = c
        .slo_tolerance
        .or(f.slo_tolerance)
        .unwrap_or(DEFAULT_SLO_TOLERANCE);
    if !(tolerance > 0.0 && tolerance < 1.0) {
        return Err(usage(format!(
            "{}: expected a fraction above 0 and below 1, got {tolerance}",
            src.origin("slo-tolerance", c.slo_tolerance.is_some())
        )));
    }
    Ok((slo, tolerance))
}

fn limits(src: &Sources<'_>, rate_type: RateType, mock: bool) -> anyhow::Result<Limits> {
    let (c, f) = (&src.cli.load, src.file);
    let num_prompts = c.num_prompts.or(f.num_prompts);
    if let (Some(n), Some(m)) = (num_prompts, c.max_requests.or(f.max_requests)) {
        if n != m {
            return Err(UsageError::new(format!(
                "--num-prompts {n} and --max-requests {m} disagree (they are the same setting); give one"
            ))
            .into());
        }
    }
    let max_requests = c.max_requests.or(f.max_requests).or(num_prompts);
    if let Some(s) = c.max_seconds.or(f.max_seconds) {
        if !(s.is_finite() && s > 0.0) {
            return Err(usage(format!(
                "{}: {s} is not a positive number of seconds",
                src.origin("max-seconds", c.max_seconds.is_some())
            )));
        }
    }
    let max_seconds = match c.max_seconds.or(f.max_seconds) {
        Some(s) => Some(s),
        // A count ends the benchmark on its own; bursts end when all finished, traces with
        // their last row.
        None if max_requests.is_some()
            || rate_type == RateType::Burst
            || rate_type == RateType::Trace =>
        {
            None
        }
        None if mock => Some(DEFAULT_MOCK_MAX_SECONDS),
        None => Some(DEFAULT_MAX_SECONDS),
    };
    let over = if c.stop_over_saturated || f.stop_over_saturated.unwrap_or(false) {
        Some(f.over_saturation.unwrap_or_default())
    } else {
        None
    };
    let limits = Limits {
        max_seconds,
        drain_timeout: c.drain_timeout.or(f.drain_timeout),
        max_requests,
        max_errors: c.max_errors.or(f.max_errors),
        max_error_rate: c.max_error_rate.or(f.max_error_rate),
        over_saturation: over,
        precision: precision(src, max_seconds)?,
    };
    limits.validate().map_err(|e| usage(e.to_string()))?;
    Ok(limits)
}

/// `--precision` and its budget (docs/metrics.md, "Precision"): a target in (0%, 100%), a
/// benchmark limited by time (`max_seconds`, the least it runs), a budget at least that long
/// (default [`bench_core::DEFAULT_BUDGET_LENGTHS`] times it), and no cooldown.
fn precision(
    src: &Sources<'_>,
    max_seconds: Option<f64>,
) -> anyhow::Result<Option<bench_core::Precision>> {
    let (c, f) = (&src.cli.load, src.file);
    let budget_origin = || src.origin("precision-budget", c.precision_budget.is_some());
    let Some(text) = c
        .precision
        .clone()
        .or(f.precision.as_ref().map(|p| p.text()))
    else {
        if c.precision_budget.or(f.precision_budget).is_some() {
            return Err(usage(format!(
                "{}: applies with --precision",
                budget_origin()
            )));
        }
        return Ok(None);
    };
    let origin = src.origin("precision", c.precision.is_some());
    let target = text
        .parse::<bench_core::Target>()
        .map_err(|e| usage(format!("{origin}: {e}")))?;
    let Some(least) = max_seconds else {
        return Err(usage(format!(
            "{origin}: runs a benchmark by time (at least --max-seconds, at most --precision-budget); it does not apply to a benchmark that ends by count (--max-requests, --num-prompts, burst, trace)"
        )));
    };
    if c.cooldown.is_some() || f.cooldown.is_some() {
        return Err(usage(format!(
            "{}: a cooldown needs a known end, and a benchmark run to {origin} ends when it is met; drop one",
            src.origin("cooldown", c.cooldown.is_some())
        )));
    }
    let budget = c
        .precision_budget
        .or(f.precision_budget)
        .unwrap_or(least * bench_core::DEFAULT_BUDGET_LENGTHS);
    if !(budget.is_finite() && budget >= least) {
        return Err(usage(format!(
            "{}: expected seconds at least --max-seconds ({least}), got {budget}",
            budget_origin()
        )));
    }
    Ok(Some(bench_core::Precision {
        target: target.0,
        budget_s: budget,
    }))
}

fn transient(
    cli: &Option<String>,
    file: &Option<Transient>,
    key: &str,
) -> anyhow::Result<Option<Transient>> {
    match cli {
        Some(s) => s
            .parse::<Transient>()
            .map(Some)
            .map_err(|e| usage(format!("--{key}: {e}"))),
        None => Ok(*file),
    }
}

pub(crate) fn resolve(
    src: &Sources<'_>,
    cli_rate_type: Option<&str>,
    cli_rate: &[String],
    force_sweep: bool,
    mock: bool,
    trace: bool,
) -> anyhow::Result<LoadSettings> {
    let ramp = super::ramp::given(src)?;
    let (cli_rate_type, cli_rate) =
        super::ramp::load_of(ramp.as_ref(), src, cli_rate_type, cli_rate)?;
    let (cli_rate_type, cli_rate) = (cli_rate_type.as_deref(), cli_rate.as_slice());
    let rate_type = rate_type(src, cli_rate_type, force_sweep, trace)?;
    let rate = rates(src, cli_rate, rate_type)?;
    let build = build_options(src, rate_type)?;
    // The values came from --speedup (or `speedup:`) when given: the error names that flag.
    let (key, from_cli) = if !src.cli.load.speedup.is_empty() {
        ("speedup", true)
    } else if src.file.speedup.is_some() {
        ("speedup", false)
    } else {
        ("rate", !cli_rate.is_empty())
    };
    let profile = Profile::build(rate_type, &rate, &build)
        .map_err(|e| usage(format!("{}: {e}", src.origin(key, from_cli))))?;
    let limits = limits(src, rate_type, mock)?;
    let ramp = super::ramp::check(ramp, rate_type, &profile, &limits)?;
    let warmup = transient(&src.cli.load.warmup, &src.file.warmup, "warmup")?;
    let warmup = super::ramp::warmup(ramp, warmup, &limits)?;
    let cooldown = transient(&src.cli.load.cooldown, &src.file.cooldown, "cooldown")?;
    bench_scheduler::Scheduler::<bench_worker::Worker>::validate_profile(
        &profile, &limits, &warmup, &cooldown,
    )
    .map_err(|e| usage(e.to_string()))?;
    Ok(LoadSettings {
        rate_type,
        rate,
        build,
        profile,
        limits,
        num_prompts: src.cli.load.num_prompts.or(src.file.num_prompts),
        warmup,
        cooldown,
        think_time: match src
            .cli
            .load
            .think_time
            .clone()
            .or(src.file.think_time.clone())
        {
            Some(t) => bench_core::ThinkTime::parse(&t).map_err(|e| {
                usage(format!(
                    "{}: {e}",
                    src.origin("think-time", src.cli.load.think_time.is_some())
                ))
            })?,
            None => bench_core::ThinkTime::None,
        },
        repeat: repeat(src)?,
        ramp,
        cancellation: None,
    })
}
