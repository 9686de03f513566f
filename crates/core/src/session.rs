//! Sessions (multi-turn conversations): what a session sends ([`ConversationSpec`]), one turn
//! of it with the server's earlier replies ([`TurnRequest`]), the pause between turns
//! ([`ThinkTime`]) and how sessions ended ([`SessionCounts`]).

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::RequestSpec;

/// One user's conversation: what a session sends, turn by turn. Turn `k` resends the system
/// prompt, every earlier user message with the server's actual reply to it, then its own user
/// message (see docs/data.md, "Sessions").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationSpec {
    /// A system prompt sent first in every turn (empty: none).
    pub system: Arc<str>,
    /// The system prompt's tokens as counted by the loader's tokenizer.
    pub system_tokens: u32,
    /// The user turns in order. Each `prompt` is the new user message only, `prompt_tokens` its
    /// count, `output_tokens` the output length asked for in that turn.
    pub turns: Vec<RequestSpec>,
}

/// A session's next turn: its conversation and the server's replies to the earlier turns (so
/// this is turn `replies.len()`, from 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRequest {
    /// The conversation.
    pub conversation: Arc<ConversationSpec>,
    /// The text the server streamed for each earlier turn, with its output token count.
    pub replies: Vec<(Arc<str>, u32)>,
}

/// The separator between messages when a conversation is flattened into one prompt (for
/// completions and TGI backends).
pub const FLATTEN_SEPARATOR: &str = "\n\n";

impl TurnRequest {
    /// This turn's index (0 for the first).
    pub fn index(&self) -> usize {
        self.replies.len()
    }

    /// This turn's user message, output length and count (`None` past the conversation's
    /// end).
    pub fn current(&self) -> Option<&RequestSpec> {
        self.conversation.turns.get(self.index())
    }

    /// Prompt tokens as the loader counts a chat turn: the system prompt, every user message
    /// up to this one and every earlier reply (message contents, no template, no separators).
    pub fn prompt_tokens(&self) -> u32 {
        let users: u32 = self
            .conversation
            .turns
            .iter()
            .take(self.index() + 1)
            .map(|t| t.prompt_tokens)
            .fold(0, u32::saturating_add);
        let replies: u32 = self
            .replies
            .iter()
            .map(|r| r.1)
            .fold(0, u32::saturating_add);
        self.conversation
            .system_tokens
            .saturating_add(users)
            .saturating_add(replies)
    }

    /// The messages in order: `("system", ..)` when there is a system prompt, then `("user",
    /// ..)` and `("assistant", ..)` alternating, ending with this turn's user message.
    pub fn messages(&self) -> Vec<(&'static str, &str)> {
        let c = &self.conversation;
        let mut out = Vec::with_capacity(2 * self.index() + 2);
        if !c.system.is_empty() {
            out.push(("system", &*c.system));
        }
        for (user, reply) in c.turns.iter().zip(&self.replies) {
            out.push(("user", &*user.prompt));
            out.push(("assistant", &*reply.0));
        }
        if let Some(t) = self.current() {
            out.push(("user", &*t.prompt));
        }
        out
    }

    /// The conversation flattened into one prompt: the messages' texts joined by
    /// [`FLATTEN_SEPARATOR`] (completions and TGI backends), with the loader's count.
    pub fn flattened(&self) -> RequestSpec {
        let texts: Vec<&str> = self.messages().into_iter().map(|(_, t)| t).collect();
        RequestSpec {
            prompt: texts.join(FLATTEN_SEPARATOR).into(),
            prompt_tokens: self.prompt_tokens(),
            output_tokens: self.current().and_then(|t| t.output_tokens),
            at: None,
            batch: Vec::new(),
            images: Vec::new(),
        }
    }
}

/// The pause between a reply and the user's next turn: fixed, or drawn per pause from a
/// seeded distribution (the same session number and turn give the same pause run to run).
/// It is excluded from every latency: a turn's intended send time is the end of its pause.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ThinkTime {
    /// No pause.
    #[default]
    None,
    /// Always this long (seconds).
    Fixed {
        /// Seconds.
        seconds: f64,
    },
    /// Exponential with this mean (seconds).
    Exponential {
        /// Mean seconds.
        mean: f64,
    },
    /// Uniform between two bounds (seconds).
    Uniform {
        /// Least seconds.
        min: f64,
        /// Greatest seconds.
        max: f64,
    },
}

/// Seconds written `2s`, `500ms` or `1.5`: `None` unless a finite number of 0 or more.
pub fn parse_secs(s: &str) -> Option<f64> {
    let s = s.trim();
    let (num, scale) = if let Some(v) = s.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = s.strip_suffix('s') {
        (v, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * scale)
}

impl ThinkTime {
    /// Parses `2s`, `500ms`, `1.5` (seconds), `exp:2s` (exponential, mean 2 s) or
    /// `uniform:1s-3s`. The error names what is wrong.
    pub fn parse(s: &str) -> Result<ThinkTime, String> {
        let bad = || {
            format!(
                "think time `{s}`: expected a duration (2s, 500ms), exp:MEAN or uniform:MIN-MAX"
            )
        };
        if let Some(m) = s.strip_prefix("exp:") {
            let mean = parse_secs(m).ok_or_else(bad)?;
            return Ok(ThinkTime::Exponential { mean });
        }
        if let Some(r) = s.strip_prefix("uniform:") {
            let (a, b) = r.split_once('-').ok_or_else(bad)?;
            let (min, max) = (
                parse_secs(a).ok_or_else(bad)?,
                parse_secs(b).ok_or_else(bad)?,
            );
            if min > max {
                return Err(format!("think time `{s}`: the minimum exceeds the maximum"));
            }
            return Ok(ThinkTime::Uniform { min, max });
        }
        let seconds = parse_secs(s).ok_or_else(bad)?;
        Ok(if seconds == 0.0 {
            ThinkTime::None
        } else {
            ThinkTime::Fixed { seconds }
        })
    }

    /// The pause before turn `turn` (from 1) of session `session`.
    pub fn pause(&self, session: u64, turn: u64) -> Duration {
        // splitmix64 of the pair: cheap, seeded, no shared generator state.
        let mut z = session
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(turn.wrapping_mul(0xBF58_476D_1CE4_E5B9));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // Uniform in (0, 1].
        let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        let secs = match *self {
            ThinkTime::None => 0.0,
            ThinkTime::Fixed { seconds } => seconds,
            ThinkTime::Exponential { mean } => -mean * u.ln(),
            ThinkTime::Uniform { min, max } => min + (max - min) * (1.0 - u),
        };
        Duration::from_secs_f64(secs.clamp(0.0, 86_400.0))
    }
}

impl std::fmt::Display for ThinkTime {
    /// The form [`ThinkTime::parse`] reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ThinkTime::None => write!(f, "0"),
            ThinkTime::Fixed { seconds } => write!(f, "{seconds}s"),
            ThinkTime::Exponential { mean } => write!(f, "exp:{mean}s"),
            ThinkTime::Uniform { min, max } => write!(f, "uniform:{min}s-{max}s"),
        }
    }
}

/// Where a request sits in its session: set by the scheduler on every turn's
/// [`crate::RequestRecord`] (`None` for single requests). Plain integers, no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionTurn {
    /// The session's number within its benchmark (from 0, in release order).
    pub session: u64,
    /// This turn's index, from 1 for the first turn.
    pub turn: u32,
    /// Turns the session's conversation has (the session is complete after turn `turns`).
    pub turns: u32,
    /// When the session's first turn was dispatched (run clock), for the session duration.
    pub start: crate::Nanos,
}

/// How the sessions of a benchmark ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCounts {
    /// Sessions that sent at least one turn.
    pub started: u64,
    /// Every turn completed.
    pub completed: u64,
    /// Ended by the end of the benchmark (its duration, request count, a stop) before its last
    /// turn completed.
    pub cut: u64,
    /// A turn failed (an error), so the session could not go on.
    pub errored: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_time_parses_and_draws_seeded_pauses() {
        assert_eq!(
            ThinkTime::parse("2s"),
            Ok(ThinkTime::Fixed { seconds: 2.0 })
        );
        assert_eq!(
            ThinkTime::parse("500ms"),
            Ok(ThinkTime::Fixed { seconds: 0.5 })
        );
        assert_eq!(ThinkTime::parse("0"), Ok(ThinkTime::None));
        assert_eq!(
            ThinkTime::parse("exp:1s"),
            Ok(ThinkTime::Exponential { mean: 1.0 })
        );
        assert_eq!(
            ThinkTime::parse("uniform:1s-3s"),
            Ok(ThinkTime::Uniform { min: 1.0, max: 3.0 })
        );
        for bad in ["x", "-1s", "uniform:3s-1s", "exp:", "uniform:1s"] {
            assert!(ThinkTime::parse(bad).is_err(), "{bad}");
        }
        let e = ThinkTime::Exponential { mean: 1.0 };
        assert_eq!(e.pause(3, 1), e.pause(3, 1));
        let n = 20_000u64;
        let mean: f64 = (0..n).map(|i| e.pause(i, 1).as_secs_f64()).sum::<f64>() / n as f64;
        assert!((mean - 1.0).abs() < 0.03, "{mean}");
        let u = ThinkTime::Uniform { min: 1.0, max: 3.0 };
        assert!((0..1000).all(|i| (1.0..=3.0).contains(&u.pause(i, 2).as_secs_f64())));
        assert_eq!(
            ThinkTime::Fixed { seconds: 2.0 }.pause(9, 9),
            Duration::from_secs(2)
        );
    }
}
