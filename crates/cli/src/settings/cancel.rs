//! The client's own cancellations (docs/metrics.md, "Cancellation"): `--cancel-rate` and
//! `--cancel-after`, AIPerf's `--request-cancellation-rate` (in percent) and
//! `--request-cancellation-delay`, from the command line or the profile's keys.

use bench_core::{parse_secs, Cancellation};

use super::{usage, Sources};

/// A share as `--cancel-rate` takes it: `10%`, or a fraction above 0 and at most 1 (`0.1`).
fn share(text: &str) -> Option<f64> {
    let t = text.trim();
    match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|p| p / 100.0),
        None => t.parse::<f64>().ok(),
    }
}

/// The share asked, and the flag or key that asked it: `--cancel-rate` (a fraction or a
/// percentage), else AIPerf's `--request-cancellation-rate` (a percentage, 10 = 10%), from the
/// command line first, then the profile.
fn asked(src: &Sources<'_>) -> anyhow::Result<Option<(f64, String)>> {
    let (cli, file) = (&src.cli.load, src.file);
    let ours = cli
        .cancel_rate
        .clone()
        .map(|t| (t, true))
        .or_else(|| Some((super::yaml_text(file.cancel_rate.as_ref()?)?, false)));
    let aiperf = cli
        .request_cancellation_rate
        .map(|p| (p, true))
        .or(file.request_cancellation_rate.map(|p| (p, false)));
    match (ours, aiperf) {
        (Some(_), Some(_)) => Err(usage(
            "--cancel-rate and --request-cancellation-rate are two spellings of one setting; give one",
        )),
        (Some((t, from_cli)), None) => {
            let from = src.origin("cancel-rate", from_cli);
            let s = share(&t).ok_or_else(|| {
                usage(format!("{from}: `{t}` is not a share (10%, 0.1)"))
            })?;
            Ok(Some((s, from)))
        }
        (None, Some((p, from_cli))) => {
            let from = src.origin("request-cancellation-rate", from_cli);
            if !(p.is_finite() && p > 0.0 && p <= 100.0) {
                return Err(usage(format!(
                    "{from}: {p} is not a percentage above 0 and at most 100 (10 cancels 10% of the requests)"
                )));
            }
            Ok(Some((p / 100.0, from)))
        }
        (None, None) => Ok(None),
    }
}

/// Reads the cancellation settings; `None` when none is given. `sessions`: the data are
/// multi-turn sessions, which the client does not cancel (refused).
pub(crate) fn given(src: &Sources<'_>, sessions: bool) -> anyhow::Result<Option<Cancellation>> {
    let (cli, file) = (&src.cli.load, src.file);
    let after = cli
        .cancel_after
        .clone()
        .map(|t| (t, true))
        .or_else(|| Some((super::yaml_text(file.cancel_after.as_ref()?)?, false)));
    let Some((share, from)) = asked(src)? else {
        if let Some((_, from_cli)) = after {
            return Err(usage(format!(
                "{} needs --cancel-rate (the share of requests to cancel)",
                src.origin("cancel-after", from_cli)
            )));
        }
        return Ok(None);
    };
    if sessions {
        return Err(usage(format!(
            "{from}: multi-turn sessions (turns=, conversation files) are not cancelled by the client; cancel single requests"
        )));
    }
    let after_s = match after {
        None => 0.0,
        Some((t, from_cli)) => {
            let from = src.origin("cancel-after", from_cli);
            parse_secs(&t).ok_or_else(|| {
                usage(format!(
                    "{from}: `{t}` is not a delay of at least 0 (0.5s, 500ms, 2)"
                ))
            })?
        }
    };
    Cancellation::new(share, after_s)
        .map(Some)
        .map_err(|e| usage(format!("{from}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_read_as_fractions_or_percentages() {
        assert_eq!(share("10%"), Some(0.1));
        assert_eq!(share(" 25 % "), Some(0.25));
        assert_eq!(share("0.1"), Some(0.1));
        assert_eq!(share("x"), None);
        assert_eq!(share("%"), None);
    }
}
