//! The regression gate of `bench report BASE.json NEW.json --fail-on RULES`: each rule names a
//! figure and the change that fails it (`requests_per_s<-5%`, `ttft_p99>+10%`), and fails only
//! when the change is past its threshold **and** the comparison judged it beyond the two 95%
//! intervals ([`crate::views::compare::change`], the one rule of the `*` mark). A change past
//! the threshold with no interval to judge it by (`?`) is unjudged: it fails only when the
//! caller says so (`--fail-on-unjudged`). docs/reports.md, "The regression gate".

use std::fmt::Write as _;
use std::str::FromStr;

use bench_core::{metric_key, Interval};

use crate::figures::capacity::slo_metric;
use crate::figures::model::{BenchmarkReport, RunReport};
use crate::views::compare::{
    change, counterpart, CapacityFigure, Change, Figure, CAPACITY_FIGURES, FIGURES,
};
use crate::Error;

/// Which way a rule's change fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `<`: a fall below the threshold (a rate, the capacity).
    Below,
    /// `>`: a rise above it (a latency).
    Above,
}

/// What a rule is checked on: a figure of every benchmark with a counterpart, or a figure of
/// the run's capacity answer.
enum Subject {
    Benchmark(Figure),
    Capacity(&'static CapacityFigure),
}

/// One rule: `key` `<` or `>` `threshold_pct` percent.
pub struct Rule {
    /// The figure's key as given (`ttft_p99`).
    pub key: String,
    /// Which way fails.
    pub direction: Direction,
    /// The threshold, percent of the base value (`-5` for `<-5%`).
    pub threshold_pct: f64,
    subject: Subject,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_string())
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = match self.direction {
            Direction::Below => '<',
            Direction::Above => '>',
        };
        write!(f, "{}{op}{:+}%", self.key, self.threshold_pct)
    }
}

/// The figures a rule can name, as the error lists them.
const KEYS: &str = "requests_per_s, output_tokens_per_s, concurrency, errored, capacity, capacity_output_tokens_per_s, knee, slo_max, or a latency <metric>_<median|pNN> such as ttft_p99, itl_median, e2el_p90";

const FORM: &str = "expected FIGURE<CHANGE% or FIGURE>CHANGE%, comma-separated, such as requests_per_s<-5%,ttft_p99>+10%";

fn subject(key: &str) -> Result<Subject, String> {
    if let Some(f) = CAPACITY_FIGURES.iter().find(|f| f.key == key) {
        return Ok(Subject::Capacity(f));
    }
    if let Some(f) = FIGURES.iter().find(|f| !f.key.is_empty() && f.key == key) {
        return Ok(Subject::Benchmark(*f));
    }
    let (metric, stat) =
        metric_key(key).map_err(|_| format!("unknown figure `{key}` (one of {KEYS})"))?;
    match stat.percentile() {
        Some(p) => Ok(Subject::Benchmark(Figure::latency("", slo_metric(metric), p))),
        None => Err(format!(
            "`{key}`: a mean has no 95% interval to judge a change by; use the median or a percentile ({})",
            metric.name()
        )),
    }
}

impl FromStr for Rule {
    type Err = Error;

    /// One rule, `FIGURE<CHANGE%` or `FIGURE>CHANGE%`; the error names the rule.
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = |why: String| Error::Parse(format!("`{s}`: {why}"));
        let at = s
            .find(['<', '>'])
            .ok_or_else(|| bad(format!("no `<` or `>`; {FORM}")))?;
        let (key, rest) = (s[..at].trim(), &s[at..]);
        let direction = if rest.starts_with('<') {
            Direction::Below
        } else {
            Direction::Above
        };
        let number = rest[1..].trim().strip_suffix('%').ok_or_else(|| {
            bad(
                "the threshold is a change in percent of the base value, such as -5% or +10%"
                    .into(),
            )
        })?;
        let threshold_pct: f64 = number
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| bad(format!("`{number}%` is not a percentage")))?;
        Ok(Rule {
            key: key.to_string(),
            direction,
            threshold_pct,
            subject: subject(key).map_err(bad)?,
        })
    }
}

/// The rules of one `--fail-on`, in the order given.
#[derive(Debug)]
pub struct Rules(pub Vec<Rule>);

impl FromStr for Rules {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let rules = s
            .split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(Rule::from_str)
            .collect::<Result<Vec<_>, _>>()?;
        if rules.is_empty() {
            return Err(Error::Parse(format!("no rule given; {FORM}")));
        }
        Ok(Rules(rules))
    }
}

/// What a check came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the threshold, or past it but within noise.
    Pass,
    /// Past the threshold and beyond the two intervals.
    Fail,
    /// Past the threshold with no interval to judge by, or the figure missing from one run:
    /// fails only with `--fail-on-unjudged`.
    Unjudged,
}

/// One rule checked on one benchmark (or on the capacity answer).
#[derive(Debug, Clone)]
pub struct Check {
    /// The benchmark's label; `None` for a figure of the capacity answer.
    pub benchmark: Option<String>,
    /// The rule's index in [`Rules`].
    pub rule: usize,
    /// The figure in the base run and in the new one.
    pub base: Option<f64>,
    /// In the new run.
    pub new: Option<f64>,
    /// Their 95% intervals.
    pub base_interval: Option<Interval>,
    /// The new run's.
    pub new_interval: Option<Interval>,
    /// The comparison's judgement of the change (`*`, `~` or `?`).
    pub change: Change,
    /// What the rule made of it.
    pub verdict: Verdict,
    digits: usize,
}

impl Check {
    /// The change, percent of the base value (infinite from a base of 0).
    pub fn change_pct(&self) -> Option<f64> {
        let (a, b) = (self.base?, self.new?);
        Some(if a == b {
            0.0
        } else {
            (b - a) / a.abs() * 100.0
        })
    }
}

/// The gate's outcome: every check, and the rules that found nothing to check.
#[derive(Debug)]
pub struct Gate {
    /// The rules, in the order given.
    pub rules: Rules,
    /// Every check, rule by rule, benchmarks in the new run's order.
    pub checks: Vec<Check>,
    /// Labels of the new run's benchmarks with no counterpart in the base run (not checked).
    pub unmatched: Vec<String>,
    /// Rules that found nothing to check (a capacity rule between runs without a capacity
    /// answer, a benchmark rule with no benchmark in common): unjudged.
    pub idle: Vec<usize>,
}

/// Whether a change of `pct` percent is past `rule`'s threshold.
fn past(rule: &Rule, pct: f64) -> bool {
    match rule.direction {
        Direction::Below => pct < rule.threshold_pct,
        Direction::Above => pct > rule.threshold_pct,
    }
}

/// A check of `rule` from the two values and intervals.
fn judge(
    rule: (usize, &Rule),
    benchmark: Option<String>,
    (base, new): (Option<f64>, Option<f64>),
    (base_interval, new_interval): (Option<Interval>, Option<Interval>),
    digits: usize,
) -> Check {
    let mut c = Check {
        benchmark,
        rule: rule.0,
        base,
        new,
        base_interval,
        new_interval,
        change: change(base_interval, new_interval),
        verdict: Verdict::Pass,
        digits,
    };
    c.verdict = match c.change_pct() {
        None => Verdict::Unjudged,
        Some(pct) if !past(rule.1, pct) => Verdict::Pass,
        Some(_) => match c.change {
            Change::Beyond => Verdict::Fail,
            Change::Noise => Verdict::Pass,
            Change::Unjudged => Verdict::Unjudged,
        },
    };
    c
}

/// Checks `rules` on `new` against `base`: each benchmark rule on every benchmark of `new` with
/// a counterpart of the same label in `base` (the comparison's pairing), each capacity rule on
/// the two capacity answers (skipped when neither run has that figure).
pub fn gate(base: &RunReport, new: &RunReport, rules: Rules) -> Gate {
    let pairs: Vec<(&BenchmarkReport, &BenchmarkReport)> = new
        .benchmarks
        .iter()
        .filter_map(|b| Some((counterpart(base, b)?, b)))
        .collect();
    let mut checks = Vec::new();
    let mut idle = Vec::new();
    for (i, rule) in rules.0.iter().enumerate() {
        let before = checks.len();
        match &rule.subject {
            Subject::Benchmark(f) => {
                for (a, b) in &pairs {
                    let values = (f.value(a), f.value(b));
                    if values == (None, None) {
                        continue;
                    }
                    let ivs = (f.interval(a), f.interval(b));
                    checks.push(judge(
                        (i, rule),
                        Some(b.label.clone()),
                        values,
                        ivs,
                        f.digits,
                    ));
                }
            }
            Subject::Capacity(f) => {
                let values = (f.value(base), f.value(new));
                if values != (None, None) {
                    let ivs = (f.interval(base), f.interval(new));
                    checks.push(judge((i, rule), None, values, ivs, 2));
                }
            }
        }
        if checks.len() == before {
            idle.push(i);
        }
    }
    let unmatched = new
        .benchmarks
        .iter()
        .filter(|b| counterpart(base, b).is_none())
        .map(|b| b.label.clone())
        .collect();
    Gate {
        rules,
        checks,
        unmatched,
        idle,
    }
}

impl Gate {
    /// Whether a check fails: [`Verdict::Fail`], or [`Verdict::Unjudged`] when `unjudged`
    /// fails too (`--fail-on-unjudged`).
    pub fn fails(&self, c: &Check, unjudged: bool) -> bool {
        c.verdict == Verdict::Fail || (unjudged && c.verdict == Verdict::Unjudged)
    }

    /// Whether the gate fails: a check fails, or (with `unjudged`) a rule checked nothing.
    pub fn failed(&self, unjudged: bool) -> bool {
        self.checks.iter().any(|c| self.fails(c, unjudged)) || (unjudged && !self.idle.is_empty())
    }

    /// The line of a check: `throughput: requests_per_s -41.3% (rule requests_per_s<-5%):
    /// 20.51 (95% 20.10 to 20.92) -> 12.04 (95% 11.80 to 12.28), beyond the intervals`.
    pub fn line(&self, c: &Check) -> String {
        let rule = &self.rules.0[c.rule];
        let value = |v: Option<f64>, iv: Option<Interval>| {
            let v = v.map_or("-".into(), |v| format!("{v:.*}", c.digits));
            match iv {
                Some(iv) => format!("{v} (95% {})", interval_words(iv, c.digits)),
                None => format!("{v} (no interval)"),
            }
        };
        let pct = c
            .change_pct()
            .map_or("missing".into(), |p| format!("{p:+.1}%"));
        let why = match (c.verdict, c.change_pct()) {
            (_, None) => "the figure is missing from one run".to_string(),
            (Verdict::Unjudged, _) => "no interval to judge by".into(),
            _ => c.change.words().into(),
        };
        // A saved run's label is read from a file: shown with its control characters escaped,
        // as a line for a terminal.
        format!(
            "{}: {} {pct} (rule {rule}): {} -> {}, {why}",
            bench_core::escape_controls(c.benchmark.as_deref().unwrap_or("capacity answer")),
            rule.key,
            value(c.base, c.base_interval),
            value(c.new, c.new_interval),
        )
    }

    /// The lines of every failing check (and, with `unjudged`, of every idle rule), then one
    /// line with the count: what `bench report --fail-on` prints to stderr.
    pub fn summary(&self, unjudged: bool) -> String {
        let mut s = String::new();
        let failing: Vec<&Check> = self
            .checks
            .iter()
            .filter(|c| self.fails(c, unjudged))
            .collect();
        for c in &failing {
            let _ = writeln!(s, "regression: {}", self.line(c));
        }
        for &i in &self.idle {
            let _ = writeln!(
                s,
                "{}: rule {} checked nothing (no benchmark label in common, or no such figure in either run)",
                if unjudged { "regression" } else { "note" },
                self.rules.0[i]
            );
        }
        let unsure = self
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Unjudged)
            .count();
        let _ = write!(
            s,
            "--fail-on: {} rule(s), {} check(s): {} failed",
            self.rules.0.len(),
            self.checks.len(),
            failing.len()
        );
        if unsure > 0 && !unjudged {
            let _ = write!(
                s,
                "; {unsure} past the threshold without an interval to judge by (they fail with --fail-on-unjudged)"
            );
        }
        s.push('\n');
        s
    }
}

/// `20.10 to 20.92`, an open upper end as `...`.
pub(crate) fn interval_words(iv: Interval, digits: usize) -> String {
    let high = if iv.high.is_finite() {
        format!("{:.*}", digits, iv.high)
    } else {
        "...".into()
    };
    format!("{:.*} to {high}", digits, iv.low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_bad_ones_name_themselves() {
        let r: Rules = "requests_per_s<-5%, ttft_p99>+10%,itl_median>5%,capacity<-5%"
            .parse()
            .expect("rules");
        let shown: Vec<String> = r.0.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "requests_per_s<-5%",
                "ttft_p99>+10%",
                "itl_median>+5%",
                "capacity<-5%"
            ]
        );
        for (bad, says) in [
            ("ttft_p99=10%", "`ttft_p99=10%`: no `<` or `>`"),
            (
                "ttft_p99>10",
                "`ttft_p99>10`: the threshold is a change in percent",
            ),
            ("ttft_p99>ten%", "`ten%` is not a percentage"),
            ("speed<-5%", "unknown figure `speed`"),
            ("ttft_mean>5%", "a mean has no 95% interval"),
            (" , ", "no rule given"),
        ] {
            let e = bad.parse::<Rules>().expect_err(bad).to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    fn check(
        rule: &str,
        base: f64,
        new: f64,
        ivs: (Option<Interval>, Option<Interval>),
    ) -> Verdict {
        let rules: Rules = rule.parse().expect("rule");
        judge((0, &rules.0[0]), None, (Some(base), Some(new)), ivs, 2).verdict
    }

    /// A change fails only past its threshold and beyond both intervals; past it with no
    /// interval it is unjudged; within noise it passes however large.
    #[test]
    fn a_rule_fails_only_past_its_threshold_and_beyond_the_intervals() {
        let iv = |low, high| Some(Interval { low, high });
        let apart = (iv(95.0, 105.0), iv(85.0, 89.0));
        assert_eq!(
            check("requests_per_s<-5%", 100.0, 87.0, apart),
            Verdict::Fail
        );
        // Beyond the intervals but within the threshold.
        assert_eq!(
            check("requests_per_s<-15%", 100.0, 87.0, apart),
            Verdict::Pass
        );
        // Past the threshold, but the intervals overlap.
        let overlap = (iv(80.0, 120.0), iv(70.0, 104.0));
        assert_eq!(
            check("requests_per_s<-5%", 100.0, 87.0, overlap),
            Verdict::Pass
        );
        assert_eq!(
            check("requests_per_s<-5%", 100.0, 87.0, (None, iv(85.0, 89.0))),
            Verdict::Unjudged
        );
        // The other way: a rise fails a `>` rule, a fall does not.
        assert_eq!(
            check(
                "ttft_p99>+10%",
                100.0,
                130.0,
                (iv(95.0, 105.0), iv(120.0, 140.0))
            ),
            Verdict::Fail
        );
        assert_eq!(
            check(
                "ttft_p99>+10%",
                130.0,
                100.0,
                (iv(120.0, 140.0), iv(95.0, 105.0))
            ),
            Verdict::Pass
        );
        // From 0: any rise is past a threshold.
        assert_eq!(
            check("errored>+0%", 0.0, 2.0, (None, None)),
            Verdict::Unjudged
        );
        assert_eq!(check("errored>+0%", 0.0, 0.0, (None, None)), Verdict::Pass);
    }
}
