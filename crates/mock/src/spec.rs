//! Speculative decoding (`spec_tokens`, `spec_accept`; docs/simulator.md, "Speculative
//! decoding"): at every decode step a drafter proposes `k` tokens for each decoding sequence
//! and the step verifies them. Each draft token is accepted with probability `a`, drawn from
//! the request's own seeded stream, and acceptance stops at the first rejection, as
//! verification does; the step then emits the accepted drafts plus the target model's own
//! token, capped by the tokens the sequence has left.
//!
//! The draws are made when the request arrives, so the response is rendered with one event
//! per step (the tokens of a step travel together, as vLLM streams them) before the engine
//! runs it, and a request's steps never depend on how it interleaves with others.
//!
//! What vLLM's counters count (`vllm:spec_decode_*`): one *draft* per decoding sequence per
//! step, `k` *draft tokens*, the *accepted* drafts of that step. As in vLLM, the counts are
//! taken at verification, before the stop check: accepted drafts past a sequence's last token
//! count, though they are never sent.

use crate::faults::Rng;

/// The seeded stream of request `id`'s acceptance draws: its own, apart from the EOS, word and
/// fault draws, so turning speculative decoding on changes none of those.
pub(crate) fn rng(seed: u64, id: u64) -> Rng {
    Rng::new(seed ^ 0x5bec_dec0_de5b_ec00, id)
}

/// The drafting model: `k` draft tokens per step, each accepted with probability `accept`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SpecModel {
    pub k: u8,
    pub accept: f64,
}

impl SpecModel {
    /// The model of a simulator whose engine drafts: none with `spec_tokens` 0 or in
    /// zero-delay mode (no engine, no steps).
    pub(crate) fn of(c: &crate::MockConfig) -> Option<Self> {
        let k = u8::try_from(c.spec_tokens).unwrap_or(u8::MAX);
        (k > 0 && !c.is_zero_delay()).then_some(Self {
            k,
            accept: c.spec_accept,
        })
    }
}

/// The accepted drafts of each decode step of one sequence, in order (empty: no speculative
/// decoding, one token per step). Step `i` emits `min(accepted[i] + 1, tokens left)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Drafts(Box<[u8]>);

impl Drafts {
    /// The steps of a sequence of `tokens` output tokens: the first comes from the prefill, the
    /// others from decode steps, each step's acceptance drawn from `rng` (at most `k` draws a
    /// step, up to the first rejection).
    pub(crate) fn draw(model: SpecModel, rng: &mut Rng, tokens: u32) -> Self {
        if model.k == 0 {
            return Self::default();
        }
        let mut steps = Vec::new();
        let mut left = tokens.saturating_sub(1);
        while left > 0 {
            let mut accepted = 0u8;
            while accepted < model.k && rng.unit() < model.accept {
                accepted += 1;
            }
            steps.push(accepted);
            left -= left.min(u32::from(accepted) + 1);
        }
        Self(steps.into_boxed_slice())
    }

    /// Steps given directly (tests).
    #[cfg(test)]
    pub(crate) fn of(accepted: &[u8]) -> Self {
        Self(accepted.into())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The accepted drafts of decode step `i` (0 past the last step).
    pub(crate) fn accepted(&self, step: usize) -> u8 {
        self.0.get(step).copied().unwrap_or(0)
    }

    /// Decode steps (drafts verified) and accepted drafts over the whole sequence.
    pub(crate) fn totals(&self) -> (u32, u32) {
        let accepted = self.0.iter().map(|&a| u32::from(a)).sum();
        (self.0.len() as u32, accepted)
    }

    /// Tokens released by the end of each step of a sequence of `tokens` tokens: 1 (the
    /// prefill's token), then after each decode step. Without drafts, every token is a step.
    pub(crate) fn step_ends(&self, tokens: u32) -> impl Iterator<Item = u32> + '_ {
        let mut done = 0u32;
        let mut step = 0usize;
        std::iter::from_fn(move || {
            if done >= tokens {
                return None;
            }
            let emit = if done == 0 || self.0.is_empty() {
                1
            } else {
                let a = self.accepted(step);
                step += 1;
                u32::from(a) + 1
            };
            done = (done + emit).min(tokens);
            Some(done)
        })
    }

    /// A cursor over the tokens of a sequence of `tokens` tokens with these steps.
    pub(crate) fn cursor(&self, tokens: u32) -> StepCursor<'_> {
        StepCursor {
            drafts: (!self.is_empty()).then_some(self),
            tokens,
            step: 0,
            end: 1,
        }
    }

    /// The last step end at or before `k` tokens (a stream fault planned "after `k` tokens"
    /// strikes between whole steps: a step's tokens are sent together).
    pub(crate) fn snap(&self, tokens: u32, k: u32) -> u32 {
        if self.is_empty() {
            return k;
        }
        self.step_ends(tokens)
            .take_while(|&e| e <= k)
            .last()
            .unwrap_or(0)
    }
}

/// Walks the tokens of a sequence in order, saying which ones end a step (the renderer sends
/// a step's tokens in one event).
#[derive(Debug, Clone)]
pub(crate) struct StepCursor<'a> {
    /// `None`: every token is a step of its own.
    drafts: Option<&'a Drafts>,
    tokens: u32,
    /// The next decode step, and the tokens released by the end of the current one.
    step: usize,
    end: u32,
}

impl StepCursor<'_> {
    /// Every token a step of its own (no speculative decoding).
    pub(crate) fn single() -> Self {
        StepCursor {
            drafts: None,
            tokens: 0,
            step: 0,
            end: 1,
        }
    }

    /// Whether token `i` (asked in ascending order) is the last of its step.
    pub(crate) fn ends_step(&mut self, i: u32) -> bool {
        let Some(d) = self.drafts else {
            return true;
        };
        while self.end <= i {
            let emit = u32::from(d.accepted(self.step)) + 1;
            self.step += 1;
            self.end = (self.end + emit).min(self.tokens);
            if self.end == self.tokens {
                break;
            }
        }
        self.end == i + 1
    }
}

/// The closed form (docs/simulator.md): per step, the expected accepted drafts
/// `E[A] = a + a^2 + ... + a^k` and `E[A^2] = sum (2i - 1) a^i`.
#[cfg(test)]
pub(crate) fn accepted_moments(k: u8, a: f64) -> (f64, f64) {
    (1..=i32::from(k)).fold((0.0, 0.0), |(m1, m2), i| {
        let p = a.powi(i);
        (m1 + p, m2 + f64::from(2 * i - 1) * p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_cover_the_tokens_and_stop_at_the_first_rejection() {
        let all = SpecModel { k: 3, accept: 1.0 };
        let d = Drafts::draw(all, &mut Rng::new(1, 1), 10);
        // 9 tokens after the first, 4 a step: 4, 4, 1 (the last step's drafts still count).
        assert_eq!(d, Drafts::of(&[3, 3, 3]));
        assert_eq!(d.step_ends(10).collect::<Vec<_>>(), vec![1, 5, 9, 10]);
        let none = SpecModel { k: 3, accept: 0.0 };
        assert_eq!(
            Drafts::draw(none, &mut Rng::new(1, 1), 4),
            Drafts::of(&[0, 0, 0])
        );
        assert!(Drafts::draw(SpecModel { k: 0, accept: 0.5 }, &mut Rng::new(1, 1), 9).is_empty());
        assert!(Drafts::draw(all, &mut Rng::new(1, 1), 1).is_empty());
        let half = SpecModel { k: 4, accept: 0.5 };
        for s in 0..200 {
            let d = Drafts::draw(half, &mut Rng::new(7, s), 50);
            assert_eq!(d, Drafts::draw(half, &mut Rng::new(7, s), 50), "seeded");
            assert_eq!(d.step_ends(50).last(), Some(50));
            assert!(d.0.iter().all(|&a| a <= 4));
        }
    }

    #[test]
    fn faults_snap_to_whole_steps() {
        let d = Drafts::of(&[2, 0, 3]);
        assert_eq!(d.step_ends(8).collect::<Vec<_>>(), vec![1, 4, 5, 8]);
        assert_eq!([1, 2, 3, 4, 5, 7].map(|k| d.snap(8, k)), [1, 1, 1, 4, 5, 5]);
        let mut c = d.cursor(8);
        let ends: Vec<u32> = (0..8).filter(|&i| c.ends_step(i)).map(|i| i + 1).collect();
        assert_eq!(ends, d.step_ends(8).collect::<Vec<_>>());
        let mut one = StepCursor::single();
        assert!((0..5).all(|i| one.ends_step(i)));
        assert_eq!(Drafts::default().snap(8, 3), 3);
        assert_eq!(
            Drafts::default().step_ends(3).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
    }
}
