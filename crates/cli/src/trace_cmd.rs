//! `bench trace`: a trace's figures, read without a server (docs/cli.md, "Inspecting a
//! trace"; definitions in docs/metrics.md, "Traces").

use std::process::ExitCode;

use bench_loader::trace::{scan, TraceSummary};
use bench_loader::{DataSpec, TraceConfig};
use serde::Serialize;

use crate::UsageError;

/// Arguments of `bench trace`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The trace file, or the keys of `--data trace=` (e.g.
    /// "trace=FILE,format=mooncake,block_size=512").
    #[arg(value_name = "FILE|KEYS")]
    pub trace: String,
    /// Print the figures as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Lengths of a trace's rows: mean, nearest-rank percentiles, greatest, total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lengths {
    /// Mean over the rows.
    pub mean: f64,
    /// Nearest-rank median.
    pub p50: u32,
    /// Nearest-rank 90th percentile.
    pub p90: u32,
    /// Nearest-rank 99th percentile.
    pub p99: u32,
    /// Greatest.
    pub max: u32,
    /// Sum.
    pub total: u64,
}

impl Lengths {
    /// The figures of `v` (`None` when empty).
    pub fn of(v: &[u32]) -> Option<Lengths> {
        if v.is_empty() {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_unstable();
        let total: u64 = s.iter().map(|&x| u64::from(x)).sum();
        let rank = |p: f64| {
            let r = ((p / 100.0) * s.len() as f64).ceil() as usize;
            s[r.clamp(1, s.len()) - 1]
        };
        Some(Lengths {
            mean: total as f64 / s.len() as f64,
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: s[s.len() - 1],
            total,
        })
    }
}

/// What `bench trace` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceFigures {
    /// The file.
    pub path: String,
    /// Its format.
    pub format: &'static str,
    /// Tokens per hash id.
    pub block_size: u32,
    /// Rows replayed.
    pub rows: u64,
    /// Rows filtered out.
    pub skipped: u64,
    /// Rows whose `input_length` was moved to fit their hash ids (`fit=length`).
    pub fitted: u64,
    /// Distinct `session_id`s (their rows are turns of multi-turn sessions).
    pub sessions: u64,
    /// Recorded offset of the last row after the first, seconds.
    pub duration_s: f64,
    /// `(rows - 1) / duration`.
    pub mean_rate: Option<f64>,
    /// Prompt lengths of the rows given as counts.
    pub prompt_tokens: Option<Lengths>,
    /// Recorded output lengths.
    pub output_tokens: Option<Lengths>,
    /// Blocks sent.
    pub blocks: u64,
    /// Blocks whose hash id an earlier row sent.
    pub blocks_seen: u64,
    /// `blocks_seen / blocks`.
    pub theoretical_hit_rate: Option<f64>,
}

impl TraceFigures {
    /// The figures of a scanned trace.
    pub fn new(c: &TraceConfig, s: &TraceSummary) -> Self {
        TraceFigures {
            path: c.path.display().to_string(),
            format: c.format.name(),
            block_size: c.block_size,
            rows: s.rows,
            skipped: s.skipped,
            fitted: s.fitted,
            sessions: s.sessions,
            duration_s: s.duration as f64 / 1e9,
            mean_rate: s.mean_rate(),
            prompt_tokens: Lengths::of(&s.input_lengths),
            output_tokens: Lengths::of(&s.output_lengths),
            blocks: s.blocks,
            blocks_seen: s.blocks_seen,
            theoretical_hit_rate: s.hit_rate(),
        }
    }

    /// The console text.
    pub fn text(&self) -> String {
        let lengths = |l: &Option<Lengths>| match l {
            Some(l) => format!(
                "mean {:.1}  p50 {}  p90 {}  p99 {}  max {}  total {}",
                l.mean, l.p50, l.p90, l.p99, l.max, l.total
            ),
            None => "-".into(),
        };
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".into(), f);
        let mut fitted = if self.fitted > 0 {
            format!(", {} fitted to their hash_ids by fit=length", self.fitted)
        } else {
            String::new()
        };
        if self.sessions > 0 {
            fitted.push_str(&format!(", turns of {} sessions", self.sessions));
        }
        format!(
            "trace {} ({}, block size {})\nrows           {} ({} skipped{fitted})\nduration       {:.3} s\nmean rate      {} req/s\nprompt tokens  {}\noutput tokens  {}\nblocks         {} sent, {} seen before\nhit rate       {} (theoretical, unbounded prefix cache)\n",
            self.path,
            self.format,
            self.block_size,
            self.rows,
            self.skipped,
            self.duration_s,
            opt(self.mean_rate, &|r| format!("{r:.2}")),
            lengths(&self.prompt_tokens),
            lengths(&self.output_tokens),
            self.blocks,
            self.blocks_seen,
            opt(self.theoretical_hit_rate, &|h| format!("{:.1}%", 100.0 * h)),
        )
    }
}

/// The trace named by `arg`: a bare file, or `--data`'s keys.
fn config(arg: &str) -> Result<TraceConfig, UsageError> {
    let keys = if arg.contains('=') {
        arg.to_string()
    } else {
        format!("trace={arg}")
    };
    match DataSpec::parse(&keys, None) {
        Ok(DataSpec::Trace(c)) => Ok(c),
        Ok(_) => Err(UsageError::new(format!(
            "bench trace {arg}: not a trace (give trace=FILE)"
        ))),
        Err(e) => Err(UsageError::new(format!("bench trace {arg}: {e}"))),
    }
}

/// Runs `bench trace`.
pub fn run(args: TraceArgs) -> anyhow::Result<ExitCode> {
    let c = config(&args.trace)?;
    let s = scan(&c, true).map_err(|e| UsageError::new(format!("bench trace: {e}")))?;
    let figures = TraceFigures::new(&c, &s);
    if args.json {
        println!("{}", serde_json::to_string(&figures)?);
    } else {
        print!("{}", figures.text());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_lengths() {
        let v: Vec<u32> = (1..=100).collect();
        let l = Lengths::of(&v).expect("some");
        assert_eq!(
            (l.p50, l.p90, l.p99, l.max, l.total),
            (50, 90, 99, 100, 5050)
        );
        assert_eq!(l.mean, 50.5);
        let l = Lengths::of(&[7]).expect("some");
        assert_eq!((l.p50, l.p99, l.max), (7, 7, 7));
        assert_eq!(Lengths::of(&[]), None);
    }
}
