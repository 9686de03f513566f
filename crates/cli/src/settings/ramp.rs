//! The ramp-up settings (docs/profiles.md and docs/metrics.md, "Ramp-up"): `--rampup` and
//! vLLM's `--ramp-up-*` flags, from the command line or the profile's keys, checked against
//! the load they ramp.

use bench_core::{parse_secs, Ramp, RampOver, RampShape};
use bench_profile::{Limits, Profile, RateType, Transient};

use super::{usage, Sources};

/// The ramp as given, and vLLM's end rate (which stands for the rate).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Given {
    pub ramp: Ramp,
    pub end: Option<f64>,
}

/// Reads the ramp-up settings; `None` when none is given.
pub(crate) fn given(src: &Sources<'_>) -> anyhow::Result<Option<Given>> {
    let (cli, file) = (&src.cli.load, src.file);
    let rampup = cli.rampup.clone().or_else(|| {
        let v = file.rampup.as_ref()?;
        Some(super::yaml_text(v).unwrap_or_else(|| format!("{v:?}")))
    });
    let shape = cli
        .ramp_up_strategy
        .clone()
        .or(file.ramp_up_strategy.clone());
    let start = cli.ramp_up_start_rps.or(file.ramp_up_start_rps);
    let end = cli.ramp_up_end_rps.or(file.ramp_up_end_rps);
    let in_window = cli.rampup_in_window || file.rampup_in_window.unwrap_or(false);
    if rampup.is_none() && shape.is_none() {
        if start.is_some() || end.is_some() || in_window {
            return Err(usage(
                "--ramp-up-start-rps, --ramp-up-end-rps and --rampup-in-window need --rampup or --ramp-up-strategy",
            ));
        }
        return Ok(None);
    }
    let shape = match shape {
        None => RampShape::Linear,
        Some(t) => RampShape::parse(&t).map_err(|e| {
            let from = src.origin("ramp-up-strategy", cli.ramp_up_strategy.is_some());
            usage(format!("{from}: {e}"))
        })?,
    };
    let over = match rampup {
        Some(t) => {
            let from = src.origin("rampup", cli.rampup.is_some());
            let d = parse_secs(&t).filter(|d| *d > 0.0).ok_or_else(|| {
                usage(format!("{from}: `{t}` is not a duration above 0 (30s, 500ms)"))
            })?;
            RampOver::Seconds(d)
        }
        None if start.is_none() || end.is_none() => {
            return Err(usage(
                "--ramp-up-strategy without --rampup is vLLM's ramp by request: give --ramp-up-start-rps and --ramp-up-end-rps",
            ))
        }
        None => RampOver::Requests,
    };
    if let Some(e) = end.filter(|e| !(e.is_finite() && *e > 0.0)) {
        return Err(usage(format!("--ramp-up-end-rps: {e} must be above 0")));
    }
    let ramp = Ramp {
        shape,
        over,
        from_rps: start.unwrap_or(0.0),
        in_window: in_window || over == RampOver::Requests,
    };
    ramp.validate(end)
        .map_err(|e| usage(format!("--ramp-up-start-rps: {e}")))?;
    Ok(Some(Given { ramp, end }))
}

/// The rate type and rates of the command line, with vLLM's `--ramp-up-end-rps B` standing
/// for `--rate B` (a Poisson load, as vLLM's, unless a rate type is given).
pub(crate) fn load_of(
    given: Option<&Given>,
    src: &Sources<'_>,
    rate_type: Option<&str>,
    rate: &[String],
) -> anyhow::Result<(Option<String>, Vec<String>)> {
    let end = given.and_then(|g| g.end);
    let Some(end) = end else {
        return Ok((rate_type.map(str::to_owned), rate.to_vec()));
    };
    if !rate.is_empty() || src.file.rate.is_some() {
        return Err(usage(
            "--ramp-up-end-rps stands for --rate; give one or the other",
        ));
    }
    let kind = rate_type
        .map(str::to_owned)
        .or(src.file.rate_type.clone())
        .unwrap_or_else(|| "poisson".into());
    Ok((Some(kind), vec![end.to_string()]))
}

/// Checks the ramp against the load: constant and poisson rates, concurrent streams (by time
/// only); a ramp by request needs the benchmark's request count; each rate at least the start
/// rate; a ramp outside the window shorter than the benchmark.
pub(crate) fn check(
    given: Option<Given>,
    rate_type: RateType,
    profile: &Profile,
    limits: &Limits,
) -> anyhow::Result<Option<Ramp>> {
    let Some(Given { ramp, .. }) = given else {
        return Ok(None);
    };
    let by_request = ramp.over == RampOver::Requests;
    match rate_type {
        RateType::Constant | RateType::Poisson => {}
        RateType::Concurrent if !by_request => {}
        other => {
            return Err(usage(format!(
                "a ramp-up applies to constant and poisson rates{}, not {other}",
                if by_request {
                    ""
                } else {
                    " and concurrent streams"
                }
            )))
        }
    }
    if by_request && limits.max_requests.is_none() {
        return Err(usage(
            "vLLM's ramp by request (--ramp-up-strategy without --rampup) needs --max-requests (--num-prompts)",
        ));
    }
    if let Profile::Fixed { benchmarks } = profile {
        for s in benchmarks {
            ramp.validate(s.target_rate())
                .map_err(|e| usage(format!("--ramp-up-start-rps: {e}")))?;
        }
    }
    if let (RampOver::Seconds(d), false, Some(m)) = (ramp.over, ramp.in_window, limits.max_seconds)
    {
        if d >= m {
            return Err(usage(format!(
                "--rampup {d} s leaves no measurement window in --max-seconds {m}: shorten it or add --rampup-in-window"
            )));
        }
    }
    Ok(Some(ramp))
}

/// The warmup with a ramp by time outside the window: the window opens when the ramp ends,
/// and a warmup the user gave runs after it (by time, or a fraction of `--max-seconds`).
pub(crate) fn warmup(
    ramp: Option<Ramp>,
    warmup: Option<Transient>,
    limits: &Limits,
) -> anyhow::Result<Option<Transient>> {
    let Some(RampOver::Seconds(d)) = ramp.filter(|r| !r.in_window).map(|r| r.over) else {
        return Ok(warmup);
    };
    let after = match warmup {
        None => 0.0,
        Some(Transient::Seconds(w)) => w,
        Some(Transient::Fraction(f)) => match limits.max_seconds {
            Some(m) => f * m,
            None => {
                return Err(usage(
                    "a --warmup fraction with --rampup needs --max-seconds (or give the warmup in seconds)",
                ))
            }
        },
        Some(Transient::Requests(_)) => {
            return Err(usage(
                "--warmup by requests with --rampup: give the warmup in seconds (it runs after the ramp)",
            ))
        }
    };
    Ok(Some(Transient::Seconds(d + after)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_by_time_opens_the_window_at_its_end_and_a_warmup_runs_after_it() {
        let ramp = Ramp {
            shape: RampShape::Linear,
            over: RampOver::Seconds(10.0),
            from_rps: 0.0,
            in_window: false,
        };
        let limits = Limits {
            max_seconds: Some(60.0),
            ..Limits::default()
        };
        let w = |t| warmup(Some(ramp), t, &limits).expect("warmup");
        assert_eq!(w(None), Some(Transient::Seconds(10.0)));
        assert_eq!(
            w(Some(Transient::Seconds(5.0))),
            Some(Transient::Seconds(15.0))
        );
        assert_eq!(
            w(Some(Transient::Fraction(0.1))),
            Some(Transient::Seconds(16.0))
        );
        assert!(warmup(Some(ramp), Some(Transient::Requests(5)), &limits).is_err());
        let inside = Ramp {
            in_window: true,
            ..ramp
        };
        assert_eq!(warmup(Some(inside), None, &limits).expect("warmup"), None);
    }
}
