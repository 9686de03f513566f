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
    /// Tool definitions sent with every turn, and the tool result a tool call is answered
    /// with (docs/data.md, "Tool calls"); `None`: no tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Arc<Tools>>,
}

/// A session's tools: the definitions every turn sends (`tools` of the chat request) and the
/// tool result bench appends when the server answers with a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tools {
    /// Each definition as compact JSON text (OpenAI's `{"type": "function", "function":
    /// {...}}`), sent verbatim.
    pub definitions: Vec<Arc<str>>,
    /// The definitions' tokens: the sum of each definition's JSON text counted by the
    /// loader's tokenizer (docs/metrics.md, "Tool calls").
    pub definition_tokens: u32,
    /// The content of the `role: tool` message answering a tool call.
    pub result: Arc<str>,
    /// Its tokens as the loader counts them.
    pub result_tokens: u32,
}

/// A tool call the server answered a turn with (the first of its `tool_calls`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolCall {
    /// The call's `id`, echoed as the tool message's `tool_call_id`.
    pub id: Arc<str>,
    /// The function's name.
    pub name: Arc<str>,
    /// The `arguments` text as streamed.
    pub arguments: Arc<str>,
    /// The call's tokens: the output tokens of the reply that made it.
    pub tokens: u32,
}

/// What a backend hands back of a turn's reply, for the next turn's history.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reply {
    /// The answer text as streamed (for a tool call: its arguments).
    pub text: String,
    /// The tool call the reply made, if any (`finish_reason: "tool_calls"`).
    pub tool_call: Option<(Arc<str>, Arc<str>)>,
    /// The replica the response named in the replica header (`--replica-header`), as a small
    /// number the backend gives each distinct name it has seen (from 0).
    pub replica: Option<u32>,
}

impl Reply {
    /// The answer text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl From<String> for Reply {
    fn from(text: String) -> Reply {
        Reply {
            text,
            tool_call: None,
            replica: None,
        }
    }
}

/// What a turn sends after the history: a new user message, or the result of the tool call
/// the server answered the last user message with.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TurnKind {
    /// A new user message.
    #[default]
    User,
    /// The tool result answering the server's tool call (an agent loop's next step).
    ToolResult,
}

impl TurnKind {
    /// True for [`TurnKind::User`] (serde's `skip_serializing_if`).
    pub fn is_user(&self) -> bool {
        *self == TurnKind::User
    }

    /// The name the reports use: `user` or `tool_result`.
    pub fn name(self) -> &'static str {
        match self {
            TurnKind::User => "user",
            TurnKind::ToolResult => "tool_result",
        }
    }
}

/// One chat message of a turn, as a chat backend renders it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatMessage<'a> {
    /// A `system`, `user` or `assistant` message with text content.
    Text(&'static str, &'a str),
    /// An assistant message carrying one tool call (no content).
    ToolCall(&'a ToolCall),
    /// A `role: tool` message answering call `id` with `content`.
    ToolResult {
        /// The call's id.
        id: &'a str,
        /// The tool's result.
        content: &'a str,
    },
}

/// A session's next turn: its conversation and the server's replies to the earlier turns (so
/// this is turn `replies.len()`, from 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRequest {
    /// The session's number in its benchmark (its key for session affinity: docs/profiles.md,
    /// "Session affinity").
    pub session: u64,
    /// The conversation.
    pub conversation: Arc<ConversationSpec>,
    /// The text the server streamed for each earlier turn, with its output token count.
    pub replies: Vec<(Arc<str>, u32)>,
    /// The tool call the server answered user turn `i` with, if any (before its text reply).
    /// One longer than `replies`, ending with a call, when this turn sends that call's result.
    pub calls: Vec<Option<ToolCall>>,
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
        let c = &self.conversation;
        let tools = c.tools.as_ref().map_or(0, |t| {
            let calls = self
                .calls
                .iter()
                .flatten()
                .map(|k| k.tokens.saturating_add(t.result_tokens))
                .fold(0, u32::saturating_add);
            t.definition_tokens.saturating_add(calls)
        });
        c.system_tokens
            .saturating_add(users)
            .saturating_add(replies)
            .saturating_add(tools)
    }

    /// What this turn sends after the history: the tool result when the server answered this
    /// user turn with a tool call, else the user message.
    pub fn kind(&self) -> TurnKind {
        if self.calls.len() > self.replies.len() && self.calls.last().is_some_and(Option::is_some) {
            TurnKind::ToolResult
        } else {
            TurnKind::User
        }
    }

    /// The chat messages in order: the system prompt, then per earlier user turn its message,
    /// its tool call and the tool result (when the server made one) and the server's reply;
    /// then this turn's user message, with its tool call and result on a tool-result turn.
    pub fn chat_messages(&self) -> Vec<ChatMessage<'_>> {
        let c = &self.conversation;
        let mut out = Vec::with_capacity(4 * self.index() + 4);
        if !c.system.is_empty() {
            out.push(ChatMessage::Text("system", &c.system));
        }
        let result = c.tools.as_ref().map_or("", |t| &*t.result);
        let call = |i: usize| {
            self.calls.get(i).and_then(Option::as_ref).map(|k| {
                [
                    ChatMessage::ToolCall(k),
                    ChatMessage::ToolResult {
                        id: &k.id,
                        content: result,
                    },
                ]
            })
        };
        for (i, (user, reply)) in c.turns.iter().zip(&self.replies).enumerate() {
            out.push(ChatMessage::Text("user", &user.prompt));
            out.extend(call(i).into_iter().flatten());
            out.push(ChatMessage::Text("assistant", &reply.0));
        }
        if let Some(t) = self.current() {
            out.push(ChatMessage::Text("user", &t.prompt));
            out.extend(call(self.index()).into_iter().flatten());
        }
        out
    }

    /// The messages in order as `(role, text)`: `("system", ..)` when there is a system
    /// prompt, then `("user", ..)` and `("assistant", ..)` alternating, ending with this
    /// turn's user message; a tool call is an `assistant` message of its arguments and its
    /// result a `tool` message.
    pub fn messages(&self) -> Vec<(&'static str, &str)> {
        self.chat_messages()
            .into_iter()
            .map(|m| match m {
                ChatMessage::Text(role, text) => (role, text),
                ChatMessage::ToolCall(k) => ("assistant", &*k.arguments),
                ChatMessage::ToolResult { content, .. } => ("tool", content),
            })
            .collect()
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
    /// What the turn sent: a user message or a tool result (then `turn` is the user turn
    /// whose tool call it answers).
    #[serde(default, skip_serializing_if = "TurnKind::is_user")]
    pub kind: TurnKind,
    /// The reply was a tool call that a tool-result request of the same turn answers (so
    /// this request did not end its turn).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tool_call: bool,
    /// The replica the response named (`--replica-header`; numbered by the backend), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
}

impl SessionTurn {
    /// Whether this request ended its session's last turn.
    pub fn ends_session(&self) -> bool {
        self.turn >= self.turns && !self.tool_call
    }
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
