//! Anthropic's `/v1/messages` replies: the streamed events (`message_start`,
//! `content_block_delta` with a `text_delta` or `thinking_delta`, `message_delta` with the
//! usage, `message_stop`, ...) and the non-streamed message object (docs/backends.md,
//! "Anthropic Messages").
//!
//! Events are told apart by their data's `type` (the SSE `event:` line repeats it). Events that
//! carry nothing to time (`content_block_start`, `content_block_stop`, `ping`, a
//! `signature_delta`) are passed over; an event of a type this module does not know is ignored
//! and counted ([`StreamState::ignored_events`]), as for the Responses API.
//!
//! Usage: Anthropic's `input_tokens` leaves out the prompt tokens read from or written to its
//! prompt cache, so the prompt is `input_tokens + cache_read_input_tokens +
//! cache_creation_input_tokens`, and the cached tokens are `cache_read_input_tokens`. The
//! counts are cumulative: the last event that gives one wins (`message_start` gives the input
//! and a placeholder output count, which is not read; `message_delta` the final output count
//! and, from newer servers, the input again).

use std::borrow::Cow;

use bench_core::{Nanos, Outcome};
use serde::Deserialize;

use super::{clamp_u32, error_message, excerpt, Flow, StreamState};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    /// `content_block_delta`'s delta (a text, thinking, signature or tool-input delta), or
    /// `message_delta`'s (`stop_reason`).
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    /// `message_start`'s message.
    #[serde(default)]
    message: Option<Message>,
    /// `message_delta`'s usage, or a non-streamed message's.
    #[serde(default)]
    usage: Option<Usage>,
    /// `error` events and error bodies: `{"type": "error", "error": {"type", "message"}}`.
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// A non-streamed reply: the message's content blocks.
    #[serde(default)]
    content: Option<Vec<Block>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    /// A tool call's arguments, streamed as JSON pieces: generated tokens too.
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

/// A content block of a non-streamed message: `text`, `thinking`, `tool_use`, ...
#[derive(Deserialize)]
struct Block {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    input: Option<serde_json::Value>,
}

impl StreamState {
    /// One `/v1/messages` event, or a whole non-streamed message.
    pub(super) fn on_messages(&mut self, data: &[u8], at: Nanos) -> Result<Flow, Outcome> {
        let ev: Event<'_> = serde_json::from_slice(data).map_err(|e| Outcome::Protocol {
            message: format!("invalid JSON in a messages event ({e}): {}", excerpt(data)),
        })?;
        match ev.kind.as_deref().unwrap_or("") {
            "content_block_delta" => {
                if let Some(d) = &ev.delta {
                    self.on_block_delta(d, at);
                }
                Ok(Flow::Continue)
            }
            "message_start" => {
                if let Some(u) = ev.message.as_ref().and_then(|m| m.usage.as_ref()) {
                    // Its `output_tokens` is a placeholder (Anthropic writes 1): only the
                    // input is read here.
                    self.messages_usage(u, false);
                }
                Ok(Flow::Continue)
            }
            "message_delta" => {
                if let Some(u) = &ev.usage {
                    self.messages_usage(u, true);
                }
                if ev.delta.is_some_and(|d| d.stop_reason.is_some()) {
                    // Its stop reason: a stream cut before `message_stop` is still whole.
                    self.finished = true;
                }
                Ok(Flow::Continue)
            }
            "message_stop" => {
                self.finished = true;
                Ok(Flow::Done)
            }
            "error" => Err(Outcome::StreamError {
                message: match &ev.error {
                    Some(e) => error_message(e),
                    None => "error event without a message".into(),
                },
            }),
            "content_block_start" | "content_block_stop" | "ping" => Ok(Flow::Continue),
            "message" => self.on_message_object(ev, at),
            _ => {
                self.ignored_events += 1;
                Ok(Flow::Continue)
            }
        }
    }

    /// A `content_block_delta`: a chunk when it carries text (answer), thinking (reasoning)
    /// or a tool call's arguments (answer); a `signature_delta` carries no token.
    fn on_block_delta(&mut self, d: &Delta<'_>, at: Nanos) {
        let (text, reasoning) = match d.kind.as_deref() {
            Some("thinking_delta") => (d.thinking.as_deref(), true),
            Some("text_delta") => (d.text.as_deref(), false),
            Some("input_json_delta") => (d.partial_json.as_deref(), false),
            Some("signature_delta") => return,
            _ => {
                self.ignored_events += 1;
                return;
            }
        };
        if let Some(t) = text.filter(|t| !t.is_empty()) {
            // A tool call's arguments are not part of the answer text a session sends back.
            if d.kind.as_deref() != Some("input_json_delta") {
                self.push_text(t, reasoning);
            }
            self.record_chunk(at, reasoning, !reasoning);
        }
    }

    /// Reads a usage object; `output` says whether its `output_tokens` is a real count.
    fn messages_usage(&mut self, u: &Usage, output: bool) {
        if let Some(p) = u.input_tokens {
            let cached = u.cache_read_input_tokens.unwrap_or(0);
            let created = u.cache_creation_input_tokens.unwrap_or(0);
            self.usage_prompt = Some(clamp_u32(p.saturating_add(cached).saturating_add(created)));
            if let Some(c) = u.cache_read_input_tokens {
                self.usage_cached = Some(clamp_u32(c));
            }
        }
        if let Some(c) = u.output_tokens.filter(|_| output) {
            self.usage_completion = Some(clamp_u32(c));
        }
    }

    /// A non-streamed reply: the message object, its thinking and text blocks read whole (one
    /// record of each kind, at the reply's arrival), its usage.
    fn on_message_object(&mut self, ev: Event<'_>, at: Nanos) -> Result<Flow, Outcome> {
        let (mut reasoned, mut answered) = (false, false);
        for block in ev.content.unwrap_or_default() {
            let (text, reasoning) = match block.kind.as_deref() {
                Some("thinking") => (block.thinking, true),
                Some("text") => (block.text, false),
                Some("tool_use") => {
                    answered |= block.input.is_some();
                    continue;
                }
                _ => continue,
            };
            if let Some(t) = text.filter(|t| !t.is_empty()) {
                self.push_text(&t, reasoning);
                reasoned |= reasoning;
                answered |= !reasoning;
            }
        }
        if reasoned {
            self.record_chunk(at, true, false);
        }
        if answered {
            self.record_chunk(at, false, true);
        }
        if let Some(u) = &ev.usage {
            self.messages_usage(u, true);
        }
        self.finished = true;
        Ok(Flow::Done)
    }
}
