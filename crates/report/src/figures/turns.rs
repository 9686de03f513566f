//! Sessions in the report: every per-request figure by turn index, and how long sessions
//! lasted (docs/metrics.md, "Sessions"). The per-request rules (TTFT, TPOT, ITL, E2EL, the
//! window's phase) are the compact request's, shared with the benchmark-wide figures; this
//! module only groups them by turn. Nothing here runs for benchmarks without sessions.

use bench_core::{
    Pages, Phase, RequestRecord, SessionCounts, SessionTurn, Status, TurnKind, Window,
};

use crate::figures::chunks::ChunkStore;
use crate::figures::compact::{us, Compact};
use crate::figures::hist::Dist;
use crate::figures::model::{RequestCounts, SessionReport, TokenSummary, TurnReport, TURN_ROWS};

/// The durations of completed sessions, recorded when their last turn arrives: the record
/// carries the session's start, so no state is kept per session.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionDurations {
    dist: Dist,
    /// Per-session cache and replicas.
    per_session: crate::figures::session_cache::PerSession,
}

impl SessionDurations {
    /// Takes one session turn's record.
    pub(crate) fn add(&mut self, turn: &SessionTurn, r: &RequestRecord) {
        // A session ends with its last turn's text answer (a tool call is followed by the
        // tool result's request).
        if turn.ends_session() && r.status() == Status::Completed {
            self.dist.record(us(r.end.saturating_sub(turn.start)));
        }
        self.per_session.add(turn, r);
    }
}

/// The key of the session durations' histogram in [`SessionReport::histograms`].
pub(crate) const DURATION_KEY: &str = "duration_ms";

/// The row (from 0) a turn (from 1) is reported in.
fn row_of(turn: u32) -> usize {
    (turn.clamp(1, TURN_ROWS) - 1) as usize
}

/// One turn row being accumulated.
#[derive(Debug, Default)]
struct TurnAcc {
    counts: RequestCounts,
    later: bool,
    ttft: Dist,
    itl: Dist,
    tpot: Dist,
    e2el: Dist,
    prompt: TokenSummary,
    output: TokenSummary,
}

impl TurnAcc {
    fn add(&mut self, r: &Compact, store: &ChunkStore, phase: Phase) {
        let c = &mut self.counts;
        match phase {
            Phase::Warmup => c.excluded_warmup += 1,
            Phase::Cooldown => c.excluded_cooldown += 1,
            Phase::Measured => match r.status {
                Status::Completed => c.completed += 1,
                Status::Incomplete => c.incomplete += 1,
                Status::Errored => c.errored += 1,
                Status::Cancelled => c.cancelled += 1,
            },
        }
        if phase != Phase::Measured || r.status != Status::Completed {
            return;
        }
        if let Some(t) = r.ttft() {
            self.ttft.record(us(t));
        }
        for gap in r.itl_us(store) {
            self.itl.record(gap);
        }
        if let Some(t) = r.tpot_us() {
            self.tpot.record(t);
        }
        self.e2el.record(us(r.e2el()));
        let (prompt, output) = r.tokens();
        self.prompt.add(prompt as u64);
        self.output.add(output as u64);
    }

    fn report(mut self, turn: u32, kind: TurnKind, percentiles: &[f64]) -> TurnReport {
        let c = &mut self.counts;
        c.total = c.completed + c.incomplete + c.errored + c.cancelled;
        let histograms = [
            ("ttft_ms", &self.ttft),
            ("itl_ms", &self.itl),
            ("tpot_ms", &self.tpot),
            ("e2el_ms", &self.e2el),
        ]
        .into_iter()
        .map(|(k, d)| (k.to_string(), d.encode()))
        .collect();
        TurnReport {
            turn,
            kind,
            and_later: self.later,
            requests: self.counts,
            ttft_ms: self.ttft.summary(percentiles),
            itl_ms: self.itl.summary(percentiles),
            tpot_ms: self.tpot.summary(percentiles),
            e2el_ms: self.e2el.summary(percentiles),
            prompt_tokens: self.prompt,
            output_tokens: self.output,
            histograms,
        }
    }
}

/// The turn rows of `requests` (single requests skipped): one per turn from 1 to the last
/// turn seen, turns past [`TURN_ROWS`] pooled into the last row; a turn whose tool calls were
/// answered has a second row, of its tool-result requests, after its user row.
fn by_turn(
    requests: &Pages<Compact>,
    store: &ChunkStore,
    window: &Window,
    percentiles: &[f64],
) -> Vec<TurnReport> {
    let mut rows: Vec<(TurnAcc, Option<TurnAcc>)> = Vec::new();
    for r in requests.iter().filter(|r| r.turn > 0) {
        let i = row_of(r.turn);
        if rows.len() <= i {
            rows.resize_with(i + 1, Default::default);
        }
        let acc = if r.tool_result {
            rows[i].1.get_or_insert_with(TurnAcc::default)
        } else {
            &mut rows[i].0
        };
        acc.later |= r.turn > TURN_ROWS;
        acc.add(r, store, r.phase(window));
    }
    let mut out = Vec::with_capacity(rows.len());
    for ((user, tool), turn) in rows.into_iter().zip(1..) {
        out.push(user.report(turn, TurnKind::User, percentiles));
        if let Some(t) = tool {
            out.push(t.report(turn, TurnKind::ToolResult, percentiles));
        }
    }
    out
}

/// The benchmark's session section: `None` unless it ran sessions (the scheduler counted
/// sessions, or session turns were added).
pub(crate) fn session_report(
    counts: Option<SessionCounts>,
    durations: Option<&SessionDurations>,
    requests: &Pages<Compact>,
    store: &ChunkStore,
    window: &Window,
    percentiles: &[f64],
) -> Option<SessionReport> {
    if counts.is_none() && durations.is_none() {
        return None;
    }
    Some(SessionReport {
        counts: counts.unwrap_or_default(),
        duration_ms: durations
            .map(|d| d.dist.summary(percentiles))
            .unwrap_or_default(),
        histograms: durations
            .map(|d| [(DURATION_KEY.to_string(), d.dist.encode())].into())
            .unwrap_or_default(),
        turns: match durations {
            Some(_) => by_turn(requests, store, window, percentiles),
            None => Vec::new(),
        },
        cache: durations.and_then(|d| d.per_session.report()),
    })
}
