//! Seeded randomness and the per-request fault plan.

use serde::{Deserialize, Serialize};

use crate::config::Faults;

/// SplitMix64: tiny, fast, and good enough for simulation draws. Each request gets its own
/// stream, derived from the server seed and the request's arrival number, so a request's draws
/// do not depend on how requests interleave.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64, stream: u64) -> Self {
        let mut r = Rng(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93));
        r.next_u64();
        r
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `lo..=hi` (`lo` when `hi < lo`).
    pub(crate) fn range(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            return lo;
        }
        let span = u64::from(hi - lo) + 1;
        lo + (self.next_u64() % span) as u32
    }
}

/// A fault that ends (or suspends) a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Terminal {
    /// Reset the connection (HTTP/1.1) or the stream (HTTP/2).
    Reset,
    /// Send `data: {"error": ...}` and end the stream.
    ErrorEvent,
    /// Stop sending, keep the connection open.
    Stall,
}

/// What goes wrong with one request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FaultPlan {
    /// Answer with this error status instead of generating.
    pub status: Option<u16>,
    /// Delay the response headers.
    pub slow_headers: bool,
    /// Insert a malformed SSE event after this many tokens.
    pub malformed_after: Option<u32>,
    /// The earliest terminal fault and the number of tokens before it.
    pub terminal: Option<(u32, Terminal)>,
}

impl FaultPlan {
    /// Draws the plan of a request of `tokens` output tokens. The number of draws is fixed, so
    /// one fault's rate never changes which requests get another.
    pub(crate) fn draw(f: &Faults, rng: &mut Rng, tokens: u32) -> Self {
        let mut plan = FaultPlan::default();
        let position = |rng: &mut Rng| {
            if tokens >= 2 {
                rng.range(1, tokens - 1)
            } else {
                // A one-token answer has no middle: the fault strikes before the token.
                rng.next_u64();
                0
            }
        };
        let u = rng.unit();
        if u < f.http_429 {
            plan.status = Some(429);
        } else if u < f.http_429 + f.http_500 {
            plan.status = Some(500);
        } else if u < f.http_429 + f.http_500 + f.http_503 {
            plan.status = Some(503);
        }
        plan.slow_headers = rng.unit() < f.slow_headers;
        let draws = [
            (rng.unit() < f.reset, position(rng), Terminal::Reset),
            (
                rng.unit() < f.stream_error,
                position(rng),
                Terminal::ErrorEvent,
            ),
            (rng.unit() < f.stall, position(rng), Terminal::Stall),
        ];
        let malformed = (rng.unit() < f.malformed, position(rng));
        for (hit, k, t) in draws {
            if hit && plan.terminal.is_none_or(|(k0, _)| k < k0) {
                plan.terminal = Some((k, t));
            }
        }
        if malformed.0 {
            plan.malformed_after = Some(malformed.1);
        }
        plan
    }

    /// The plan with every stream fault's position moved by `snap` (with speculative
    /// decoding: to the last whole step at or before it).
    pub(crate) fn snapped(mut self, snap: impl Fn(u32) -> u32) -> Self {
        self.malformed_after = self.malformed_after.map(&snap);
        self.terminal = self.terminal.map(|(k, t)| (snap(k), t));
        self
    }

    /// Whether the plan changes the body of a streaming response.
    pub(crate) fn touches_stream(&self) -> bool {
        self.malformed_after.is_some() || self.terminal.is_some()
    }

    /// The faults for the request log.
    pub(crate) fn records(&self, streaming: bool) -> Vec<FaultRecord> {
        let mut v = Vec::new();
        if self.slow_headers {
            v.push(FaultRecord {
                kind: "slow_headers".into(),
                after_tokens: None,
            });
        }
        if let Some(s) = self.status {
            v.push(FaultRecord {
                kind: format!("http_{s}"),
                after_tokens: None,
            });
            return v;
        }
        if !streaming {
            return v;
        }
        if let Some(k) = self.malformed_after {
            v.push(FaultRecord {
                kind: "malformed".into(),
                after_tokens: Some(k),
            });
        }
        if let Some((k, t)) = self.terminal {
            let kind = match t {
                Terminal::Reset => "reset",
                Terminal::ErrorEvent => "stream_error",
                Terminal::Stall => "stall",
            };
            v.push(FaultRecord {
                kind: kind.into(),
                after_tokens: Some(k),
            });
        }
        v
    }
}

/// One injected fault, as the request log reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// `http_429`, `http_500`, `http_503`, `slow_headers`, `reset`, `malformed`,
    /// `stream_error` or `stall`.
    pub kind: String,
    /// For stream faults: the number of tokens written before it.
    pub after_tokens: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_in_range() {
        let mut a = Rng::new(7, 3);
        let mut b = Rng::new(7, 3);
        for _ in 0..1000 {
            let x = a.range(5, 9);
            assert_eq!(x, b.range(5, 9));
            assert!((5..=9).contains(&x));
            let u = a.unit();
            assert_eq!(u, b.unit());
            assert!((0.0..1.0).contains(&u));
        }
        assert_ne!(Rng::new(7, 3).next_u64(), Rng::new(7, 4).next_u64());
        assert_eq!(Rng::new(1, 1).range(4, 2), 4);
    }

    #[test]
    fn rates_are_honoured_and_positions_are_mid_stream() {
        let f = Faults {
            http_503: 0.25,
            reset: 0.5,
            ..Faults::default()
        };
        let mut n503 = 0;
        let mut nreset = 0;
        for i in 0..4000 {
            let p = FaultPlan::draw(&f, &mut Rng::new(1, i), 10);
            if p.status == Some(503) {
                n503 += 1;
            }
            if let Some((k, Terminal::Reset)) = p.terminal {
                nreset += 1;
                assert!((1..=9).contains(&k));
            }
            assert!(p.malformed_after.is_none());
        }
        assert!((900..1100).contains(&n503), "{n503}");
        assert!((1850..2150).contains(&nreset), "{nreset}");
    }

    #[test]
    fn earliest_terminal_fault_wins() {
        let f = Faults {
            reset: 1.0,
            stall: 1.0,
            stream_error: 1.0,
            ..Faults::default()
        };
        for i in 0..200 {
            let mut rng = Rng::new(3, i);
            let p = FaultPlan::draw(&f, &mut rng, 50);
            // Re-draw the positions to know which was earliest.
            let mut r = Rng::new(3, i);
            r.unit();
            r.unit();
            r.unit();
            let kr = r.range(1, 49);
            r.unit();
            let ke = r.range(1, 49);
            r.unit();
            let ks = r.range(1, 49);
            let (k, _) = p.terminal.expect("terminal");
            assert_eq!(k, kr.min(ke).min(ks));
        }
    }
}
