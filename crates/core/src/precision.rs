//! `--precision`: run a benchmark until its key figures are sure enough, within a time budget
//! (docs/metrics.md, "Precision").
//!
//! The key figures are the request throughput, the output token throughput and the medians of
//! TTFT and ITL. A benchmark is *precise* when the 95% interval of each key figure it has (the
//! batch-means intervals of the report) lies within `± target` of the figure: its half-width
//! is at most `target × figure`. A benchmark that generates no tokens (embeddings) has only the
//! request throughput. This type is the target and the budget; the report computes the
//! half-widths and judges them ([`Precision::met`]).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The default budget, in benchmark lengths (`max_seconds`): a benchmark run to a precision
/// target runs at most four times its planned length unless told otherwise.
pub const DEFAULT_BUDGET_LENGTHS: f64 = 4.0;

/// How many key figures there are, in the order [`Precision::KEY_FIGURES`] names them.
pub const KEY_FIGURES: usize = 4;

/// The precision target of a run and its time budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Precision {
    /// The largest relative half-width accepted, a fraction in `(0, 1)` (`0.05` for `5%`).
    pub target: f64,
    /// The most seconds a benchmark may run for it.
    pub budget_s: f64,
}

/// A target that is not a percentage in `(0%, 100%)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrecisionError(pub String);

impl fmt::Display for PrecisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "expected a percentage above 0% and below 100% (e.g. 5%) or a fraction (0.05), got `{}`",
            self.0
        )
    }
}

impl std::error::Error for PrecisionError {}

/// A precision target: `5%` or the fraction `0.05`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target(pub f64);

impl FromStr for Target {
    type Err = PrecisionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let value = match t.strip_suffix('%') {
            Some(pct) => pct.trim().parse::<f64>().map(|v| v / 100.0),
            None => t.parse::<f64>(),
        };
        match value {
            Ok(v) if v.is_finite() && v > 0.0 && v < 1.0 => Ok(Target(v)),
            _ => Err(PrecisionError(s.to_string())),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", round_pct(self.0 * 100.0))
    }
}

/// `x` without the float noise of a percentage (`5` for `0.05 × 100`).
fn round_pct(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

impl Precision {
    /// The key figures' names, as the report's `precision.half_widths` keys them.
    pub const KEY_FIGURES: [&'static str; KEY_FIGURES] = [
        "requests_per_s",
        "output_tokens_per_s",
        "ttft_median",
        "itl_median",
    ];

    /// Whether the relative half-widths of the key figures (`None`: the figure has no interval)
    /// meet the target: the request throughput's must be known, and each other figure's too
    /// unless `tokens` is false (a benchmark that generated nothing); each at most the target.
    pub fn met(&self, half_widths: &[Option<f64>; KEY_FIGURES], tokens: bool) -> bool {
        half_widths.iter().enumerate().all(|(i, h)| match h {
            Some(h) => *h <= self.target,
            None => i > 0 && !tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_as_percentages_or_fractions() {
        assert_eq!("5%".parse::<Target>(), Ok(Target(0.05)));
        assert_eq!(" 2.5 % ".parse::<Target>(), Ok(Target(0.025)));
        assert_eq!("0.1".parse::<Target>(), Ok(Target(0.1)));
        for bad in [
            "0", "0%", "abc", "150%", "100%", "1", "-5%", "NaN", "inf%", "",
        ] {
            assert!(bad.parse::<Target>().is_err(), "{bad}");
        }
        assert_eq!(Target(0.05).to_string(), "5%");
    }

    #[test]
    fn met_needs_every_key_figure_within_the_target() {
        let p = Precision {
            target: 0.05,
            budget_s: 60.0,
        };
        assert!(p.met(&[Some(0.01), Some(0.05), Some(0.02), Some(0.0)], true));
        assert!(!p.met(&[Some(0.01), Some(0.051), Some(0.02), Some(0.0)], true));
        assert!(!p.met(&[Some(0.01), Some(0.01), None, Some(0.0)], true));
        assert!(p.met(&[Some(0.01), None, None, None], false));
        assert!(!p.met(&[None, None, None, None], false));
    }
}
