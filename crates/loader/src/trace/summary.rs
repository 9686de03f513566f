//! What a trace holds, read in one pass without a server: rows, duration, rate, lengths and
//! the prefix-cache hit rate an unbounded cache would reach (docs/metrics.md, "Traces").

use std::collections::HashSet;

use bench_core::Nanos;
use serde::Serialize;

use super::{TraceConfig, TraceInput, TraceReader};
use crate::Error;

/// A trace's figures, as `bench trace` prints them and replays report them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TraceSummary {
    /// Rows replayed (after `start`, the filters and `samples`).
    pub rows: u64,
    /// Rows filtered out (BurstGPT's `model` / `log_type`, rows recording 0 tokens).
    pub skipped: u64,
    /// Rows whose `input_length` was moved to fit their hash ids (`fit=length`).
    pub fitted: u64,
    /// Sessions (distinct `session_id`s of the rows replayed); their rows are turns.
    pub sessions: u64,
    /// Recorded offset of the last row replayed after the first (ns).
    pub duration: Nanos,
    /// Recorded prompt tokens of the rows given as counts (text prompts are counted when sent).
    pub input_tokens: u64,
    /// Recorded output tokens.
    pub output_tokens: u64,
    /// Blocks of the rows given as counts: `ceil(input_length / block_size)` each.
    pub blocks: u64,
    /// Blocks whose hash id an earlier row already sent.
    pub blocks_seen: u64,
    /// Every row's prompt length in tokens (rows given as counts), in file order; kept only
    /// when asked for.
    #[serde(skip)]
    pub input_lengths: Vec<u32>,
    /// Every row's recorded output length, kept only when asked for.
    #[serde(skip)]
    pub output_lengths: Vec<u32>,
}

impl TraceSummary {
    /// Mean rows per second over the recorded duration (`None` under two rows or no span).
    pub fn mean_rate(&self) -> Option<f64> {
        (self.rows >= 2 && self.duration > 0)
            .then(|| (self.rows - 1) as f64 / (self.duration as f64 / 1e9))
    }

    /// Theoretical prefix-cache hit rate: blocks whose hash id was sent before / blocks sent,
    /// for an unbounded cache (`None` without blocks).
    pub fn hit_rate(&self) -> Option<f64> {
        (self.blocks > 0).then(|| self.blocks_seen as f64 / self.blocks as f64)
    }
}

/// Reads the whole trace once, checking every row, and sums it up. `lengths` keeps every
/// row's lengths (for distributions; 8 bytes a row). Hash ids seen are held in a set (8 bytes
/// each) for the hit rate.
pub fn scan(config: &TraceConfig, lengths: bool) -> Result<TraceSummary, Error> {
    let mut reader = TraceReader::open(config)?;
    let mut s = TraceSummary::default();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut sessions: HashSet<String> = HashSet::new();
    let bs = u64::from(config.block_size.max(1));
    while let Some(row) = reader.next_row()? {
        s.rows += 1;
        s.fitted += u64::from(row.fitted);
        if let Some(id) = &row.session {
            s.sessions += u64::from(sessions.insert(id.clone()));
        }
        s.duration = row.at;
        let out = row.output_tokens.unwrap_or(0);
        s.output_tokens += u64::from(out);
        if let TraceInput::Blocks { tokens, hash_ids } = &row.input {
            s.input_tokens += u64::from(*tokens);
            if hash_ids.is_empty() {
                s.blocks += u64::from(*tokens).div_ceil(bs);
            } else {
                s.blocks += hash_ids.len() as u64;
                s.blocks_seen += hash_ids.iter().filter(|h| !seen.insert(**h)).count() as u64;
            }
            if lengths {
                s.input_lengths.push(*tokens);
            }
        }
        if lengths {
            s.output_lengths.push(out);
        }
    }
    s.skipped = reader.skipped();
    if s.rows == 0 {
        return Err(super::bad(
            &config.path,
            0,
            if s.skipped > 0 || config.start > 0 {
                "no row left to replay after start=, model= or log_type="
            } else {
                "empty file, no rows"
            },
        ));
    }
    Ok(s)
}

/// A trace's peak arrival rate (rows/s): the most rows recorded in any span of `window`
/// (counting from each row's arrival), over the window; a trace shorter than the window gives
/// its mean rate ([`TraceSummary::mean_rate`]) instead. `None` under two rows or no span.
pub fn peak_rate(config: &TraceConfig, window: Nanos) -> Result<Option<f64>, Error> {
    let mut reader = TraceReader::open(config)?;
    let mut at = Vec::new();
    while let Some(row) = reader.next_row()? {
        at.push(row.at);
    }
    Ok(peak_of(&mut at, window))
}

/// [`peak_rate`] of arrival offsets `at` (sorted here).
fn peak_of(at: &mut [Nanos], window: Nanos) -> Option<f64> {
    at.sort_unstable();
    let span = at.last()?.saturating_sub(*at.first()?);
    if at.len() < 2 || span == 0 || window == 0 {
        return None;
    }
    if span < window {
        return Some((at.len() - 1) as f64 / (span as f64 / 1e9));
    }
    let (mut most, mut first) = (0, 0);
    for (last, &t) in at.iter().enumerate() {
        while t - at[first] >= window {
            first += 1;
        }
        most = most.max(last - first + 1);
    }
    Some(most as f64 / (window as f64 / 1e9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_is_the_busiest_window() {
        const S: Nanos = 1_000_000_000;
        // One row a second for 100 s, and a burst of 30 more between 50 and 52 s.
        let mut at: Vec<Nanos> = (0..100).map(|i| i * S).collect();
        at.extend((0..30).map(|i| 50 * S + i * S / 15));
        // The busiest 10 s holds the burst's 30 and 10 of the steady rows: 4 rows/s.
        assert_eq!(peak_of(&mut at.clone(), 10 * S), Some(4.0));
        // A window longer than the trace: the mean rate.
        let mut two = vec![0, 4 * S];
        assert_eq!(peak_of(&mut two, 60 * S), Some(0.25));
        assert_eq!(peak_of(&mut [5], 10 * S), None);
    }
}
