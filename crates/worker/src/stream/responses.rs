//! OpenAI's `/v1/responses` replies: the streamed events (`response.output_text.delta`,
//! `response.reasoning_text.delta`, `response.reasoning_summary_text.delta`,
//! `response.completed`, ...) and the non-streamed response object (docs/backends.md,
//! "Responses").
//!
//! Events are told apart by their data's `type` (the SSE `event:` line repeats it and is not
//! needed). Lifecycle events (`response.created`, `*.added`, `*.done`, ...) carry nothing to
//! time and are passed over; an event of a type this module does not know is ignored and
//! counted ([`StreamState::ignored_events`]), so a server that adds event types never fails a
//! request.

use std::borrow::Cow;

use bench_core::{Nanos, Outcome};
use serde::Deserialize;

use super::{clamp_u32, error_message, excerpt, Flow, StreamState};

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    /// The response object of `response.completed` / `.incomplete` / `.failed`.
    #[serde(default)]
    response: Option<Response>,
    /// `error` events: `{"type": "error", "message": ...}` (or an `error` object).
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// A non-streamed reply is the response object itself.
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default)]
    output: Option<Vec<OutputItem>>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// An item of a response's `output`: a `message` (its `content` parts of type `output_text`)
/// or a `reasoning` item (`content` parts of type `reasoning_text`, `summary` parts).
#[derive(Deserialize)]
struct OutputItem {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    content: Option<Vec<Part>>,
    #[serde(default)]
    summary: Option<Vec<Part>>,
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
}

/// Event types that carry nothing to time or count.
fn lifecycle(kind: &str) -> bool {
    matches!(
        kind,
        "response.created" | "response.in_progress" | "response.queued"
    ) || (kind.starts_with("response.") && (kind.ends_with(".done") || kind.ends_with(".added")))
}

impl StreamState {
    /// One `/v1/responses` event, or a whole non-streamed response object.
    pub(super) fn on_responses(&mut self, data: &[u8], at: Nanos) -> Result<Flow, Outcome> {
        let ev: Event<'_> = serde_json::from_slice(data).map_err(|e| Outcome::Protocol {
            message: format!("invalid JSON in a responses event ({e}): {}", excerpt(data)),
        })?;
        let Some(kind) = ev.kind.as_deref() else {
            return self.on_response_object(ev, at);
        };
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                self.on_delta(ev.delta.as_deref(), false, at)
            }
            "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
                self.on_delta(ev.delta.as_deref(), true, at)
            }
            "response.completed" | "response.incomplete" => {
                if let Some(u) = ev.response.as_ref().and_then(|r| r.usage.as_ref()) {
                    self.responses_usage(u);
                }
                self.finished = true;
                Ok(Flow::Done)
            }
            "response.failed" | "error" => {
                let error = ev.response.and_then(|r| r.error).or(ev.error);
                let message = match (error, ev.message) {
                    (Some(e), _) => error_message(&e),
                    (None, Some(m)) => excerpt(m.as_bytes()),
                    (None, None) => format!("{kind} event without a message"),
                };
                Err(Outcome::StreamError { message })
            }
            k if lifecycle(k) => Ok(Flow::Continue),
            _ => {
                self.ignored_events += 1;
                Ok(Flow::Continue)
            }
        }
    }

    fn on_delta(
        &mut self,
        delta: Option<&str>,
        reasoning: bool,
        at: Nanos,
    ) -> Result<Flow, Outcome> {
        if let Some(d) = delta.filter(|d| !d.is_empty()) {
            self.push_text(d, reasoning);
            self.record_chunk(at, reasoning, !reasoning);
        }
        Ok(Flow::Continue)
    }

    fn responses_usage(&mut self, u: &Usage) {
        if let Some(p) = u.input_tokens {
            self.usage_prompt = Some(clamp_u32(p));
        }
        if let Some(c) = u.output_tokens {
            self.usage_completion = Some(clamp_u32(c));
        }
        if let Some(r) = u
            .output_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens)
        {
            self.usage_reasoning = Some(clamp_u32(r));
        }
    }

    /// A non-streamed reply: the response object, its reasoning and message items read whole.
    fn on_response_object(&mut self, ev: Event<'_>, at: Nanos) -> Result<Flow, Outcome> {
        if let Some(e) = &ev.error.filter(|e| !e.is_null()) {
            return Err(Outcome::StreamError {
                message: error_message(e),
            });
        }
        if ev.object.as_deref() != Some("response") && ev.output.is_none() {
            self.ignored_events += 1;
            return Ok(Flow::Continue);
        }
        for item in ev.output.unwrap_or_default() {
            let reasoning = item.kind.as_deref() == Some("reasoning");
            let parts = item.content.into_iter().chain(item.summary).flatten();
            let mut any = false;
            for text in parts.filter_map(|p| p.text).filter(|t| !t.is_empty()) {
                self.push_text(&text, reasoning);
                any = true;
            }
            if any {
                self.record_chunk(at, reasoning, !reasoning);
            }
        }
        if let Some(u) = &ev.usage {
            self.responses_usage(u);
        }
        self.finished = true;
        Ok(Flow::Done)
    }
}
