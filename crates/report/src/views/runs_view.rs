//! The console blocks of runs made of parts: the pooled trials of a repeated run
//! ([`crate::figures::trials`]) and the shards' clocks of a merged run
//! ([`crate::figures::merge`]).

use std::fmt::Write as _;

use crate::figures::interval::{Interval, METRICS};
use crate::figures::model::{MergedRun, RunReport};

fn pm(v: f64, iv: Interval) -> String {
    format!("{v:.2} ({:.2} to {:.2})", iv.low, iv.high)
}

/// The console block after the tables of a repeated run: how many trials ran and why they
/// stopped, then one line per pooled benchmark with the across-trial 95% intervals of its
/// throughput and latency medians, and the capacity and SLO answers' (empty without trials).
pub fn render_trials(run: &RunReport) -> String {
    let Some(t) = &run.trials else {
        return String::new();
    };
    let mut s = format!(
        "Trials: {} of {} ran ({}); pooled over every trial's requests; 95% intervals across trials (Student t)\n",
        t.runs.len(),
        t.requested,
        t.stop_reason
    );
    for b in &run.benchmarks {
        let Some(iv) = b.intervals.as_ref().filter(|i| i.method == "trials") else {
            continue;
        };
        let _ = write!(
            s,
            "  {}: req/s {}, out tok/s {}",
            b.label,
            pm(b.rates.requests_per_s, iv.requests_per_s),
            pm(b.rates.output_tokens_per_s, iv.output_tokens_per_s)
        );
        for (m, name) in [(METRICS[0], "TTFT"), (METRICS[1], "ITL")] {
            let median = iv.metrics.get(m.json_key()).and_then(|x| x.median);
            if let (Some(i), Some(v)) = (median, b.percentile_ms(m, 50.0)) {
                let _ = write!(s, ", {name} median ms {}", pm(v, i));
            }
        }
        s.push('\n');
    }
    for (name, a) in [
        ("capacity req/s", &t.capacity),
        ("SLO answer req/s", &t.slo),
    ] {
        if let Some(a) = a {
            let iv = Interval {
                low: a.low,
                high: a.high,
            };
            let _ = writeln!(s, "  {name}: {}", pm(a.mean, iv));
        }
    }
    s
}

/// One line per merged run on the console (docs/distributed.md, "Clocks"): the shards, their
/// start skew and what each measured of its clock.
pub fn render_clocks(m: &MergedRun) -> String {
    let mut out = format!(
        "Shards: {} merged, shared start {}, largest start skew {:.3} ms",
        m.count, m.start_at, m.max_start_skew_ms
    );
    match m.min_clock_skew_ms {
        Some(s) if s > 0.0 => out.push_str(&format!(
            ", clocks at least {s:.1} ms apart by the target's Date header"
        )),
        Some(_) => out.push_str(", clocks not proven apart by the target's Date header"),
        None => {}
    }
    out.push('\n');
    for s in &m.shards {
        out.push_str(&format!("  shard {} on {}:", s.index, s.host));
        if let Some(l) = s.start_late_ms {
            out.push_str(&format!(" started {l:.3} ms late"));
        }
        if let Some(c) = s.clock {
            out.push_str(&format!(
                ", wall - run clock {:.3} ms",
                c.wall_minus_run_start_ms
            ));
            if let Some(e) = c.wall_minus_run_end_ms {
                out.push_str(&format!(" at start, {e:.3} ms at end"));
            }
            if let Some([lo, hi]) = c.server_offset_ms {
                out.push_str(&format!(", wall - target clock in [{lo:.0}, {hi:.0}] ms"));
            }
        }
        out.push('\n');
    }
    out
}
