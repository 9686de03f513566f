//! What the events of each backend's stream mean: which carry generated text (and so count as a
//! chunk), where the usage is, which mark the end, which are errors.
//!
//! Never panics and never indexes into server JSON: every field is optional, unknown fields are
//! ignored, and anything that is not JSON where JSON is expected is a protocol error.
//!
//! The serde structs below define what an event means. Each event first goes through the
//! allocation-free scanner of [`crate::fastjson`], which answers only when it is sure to agree
//! with them and otherwise hands the event to serde_json (error bodies, malformed JSON, odd
//! types...), so the fast path never changes a result.

use std::borrow::Cow;

use bench_core::{Chunk, Nanos, Outcome};
use serde::Deserialize;

use crate::excerpt::excerpt;
use crate::fastjson;
use crate::sse::{SseEvent, SseParser};
use crate::think::ThinkTags;
use crate::BackendKind;

mod messages;
mod responses;

/// What the caller should do after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The stream's final event arrived.
    Done,
}

/// Accumulated state of one response stream.
#[derive(Debug)]
pub(crate) struct StreamState {
    backend: BackendKind,
    /// Generated answer text, kept only when a tokenizer fallback (or a session's history)
    /// will need it.
    pub(crate) text: Option<String>,
    /// Generated reasoning text, kept with `text` (never part of it: a session's history
    /// carries the answer only, as chat APIs expect).
    pub(crate) reasoning_text: Option<String>,
    pub(crate) chunks: Vec<Chunk>,
    pub(crate) usage_prompt: Option<u32>,
    pub(crate) usage_completion: Option<u32>,
    /// `usage.completion_tokens_details.reasoning_tokens`.
    pub(crate) usage_reasoning: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub(crate) usage_cached: Option<u32>,
    /// Events that carried reasoning text (with or without answer text).
    pub(crate) reasoning_events: u32,
    /// `<think>` tags in answer text are read (`--think-tags`).
    think: Option<Box<ThinkTags>>,
    /// The reply's tool call, when it made one: its id and function name (its arguments are
    /// the answer text).
    pub(crate) tool_call: Option<(std::sync::Arc<str>, std::sync::Arc<str>)>,
    /// The replica the response's replica header named, numbered by the worker.
    pub(crate) replica: Option<u32>,
    /// Length of the kept text when the current event began (think tags only).
    event_mark: usize,
    /// A finish reason (or TGI's final event) was seen.
    pub(crate) finished: bool,
    /// Try the scanner of [`fastjson`] before serde_json.
    fast: bool,
    /// Events the scanner interpreted (the others went to serde_json).
    scanned: u64,
    /// Of those, events read through the template of the previous ones.
    templated: u64,
    template: fastjson::Template,
    /// Inputs of the request (pooling backends check the reply's vector or result count).
    pub(crate) inputs: usize,
    /// A pooling reply's vectors or results.
    pub(crate) pooled: Option<u32>,
    /// `/v1/responses` and `/v1/messages` events of unknown types, ignored.
    pub(crate) ignored_events: u32,
}

#[derive(Deserialize)]
struct OaiEvent<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<OaiChoice<'a>>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// vLLM's error body: `{"object": "error", "message": ...}`.
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct OaiChoice<'a> {
    /// Completions.
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    /// Chat streams.
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    /// Chat, non-streamed.
    #[serde(default, borrow)]
    message: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    /// vLLM / DeepSeek reasoning models.
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    /// Newer vLLM and OpenRouter spelling.
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    /// Tool calls: the first call's id and name arrive once, its arguments in pieces. Read
    /// leniently (any JSON: servers send `null` and `[]` in every delta).
    #[serde(default)]
    tool_calls: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

/// OpenAI's `usage.prompt_tokens_details` (vLLM with `--enable-prompt-tokens-details`).
#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// OpenAI's `usage.completion_tokens_details`.
#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct TgiEvent<'a> {
    #[serde(default, borrow)]
    token: Option<TgiToken<'a>>,
    #[serde(default, borrow)]
    generated_text: Option<Cow<'a, str>>,
    #[serde(default)]
    details: Option<TgiDetails>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct TgiToken<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    special: bool,
}

#[derive(Deserialize)]
struct TgiDetails {
    #[serde(default)]
    generated_tokens: Option<u64>,
    #[serde(default)]
    prefill: Option<Vec<serde::de::IgnoredAny>>,
}

fn clamp_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn error_message(v: &serde_json::Value) -> String {
    let s = match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Object(m) => match m.get("message") {
            Some(serde_json::Value::String(s)) => s.clone(),
            _ => v.to_string(),
        },
        other => other.to_string(),
    };
    excerpt(s.as_bytes())
}

impl StreamState {
    pub(crate) fn new(backend: BackendKind, keep_text: bool, expected_chunks: usize) -> Self {
        Self {
            backend,
            text: keep_text.then(String::new),
            reasoning_text: keep_text.then(String::new),
            chunks: Vec::with_capacity(expected_chunks),
            usage_prompt: None,
            usage_completion: None,
            usage_reasoning: None,
            usage_cached: None,
            reasoning_events: 0,
            think: None,
            event_mark: 0,
            finished: false,
            fast: true,
            scanned: 0,
            templated: 0,
            template: fastjson::Template::default(),
            inputs: 1,
            pooled: None,
            ignored_events: 0,
            tool_call: None,
            replica: None,
        }
    }

    /// Takes a chat delta's (or message's) first tool call (`index` 0, or the first): its id
    /// and name, and its arguments piece, returned to be recorded as answer text. Anything but
    /// a list of call objects carries no call.
    fn tool_call_piece<'d>(&mut self, calls: &'d serde_json::Value) -> Option<&'d str> {
        let call = calls.as_array()?.iter().find(|c| {
            c.get("index")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
                == 0
        })?;
        let text = |v: Option<&'d serde_json::Value>| v.and_then(serde_json::Value::as_str);
        let slot = self.tool_call.get_or_insert_with(Default::default);
        if let Some(id) = text(call.get("id")) {
            slot.0 = id.into();
        }
        let f = call.get("function")?;
        if let Some(name) = text(f.get("name")) {
            slot.1 = name.into();
        }
        text(f.get("arguments"))
    }

    fn push_text(&mut self, s: &str, reasoning: bool) {
        let kept = if reasoning {
            &mut self.reasoning_text
        } else {
            &mut self.text
        };
        if let Some(t) = kept {
            t.push_str(s);
        }
    }

    /// Appends every answer piece to the kept text and every reasoning piece to the kept
    /// reasoning text, or nothing if one fails to decode (the scanner's checks make that impossible;
    /// the caller then falls back to serde_json).
    fn push_texts(&mut self, texts: &fastjson::Texts<'_>) -> bool {
        let (Some(t), Some(r)) = (&mut self.text, &mut self.reasoning_text) else {
            return true;
        };
        let (mark, rmark) = (t.len(), r.len());
        for (piece, reasoning) in texts.iter_kinds() {
            let kept = if reasoning { &mut *r } else { &mut *t };
            if piece.push_to(kept).is_none() {
                t.truncate(mark);
                r.truncate(rmark);
                return false;
            }
        }
        true
    }

    /// Records a chunk of `texts` (reasoning when it carried reasoning and no answer text).
    #[inline]
    fn push_chunk(&mut self, at: Nanos, texts: &fastjson::Texts<'_>) {
        let (mut reasoning, mut answer) = (texts.any_reasoning(), texts.any_answer());
        if answer && self.think.is_some() {
            (reasoning, answer) = self.think_pieces(texts, reasoning);
        }
        self.record_chunk(at, reasoning, answer);
    }

    /// Records a chunk that carried reasoning and/or answer text. A chunk with neither (only
    /// whitespace next to a think tag) belongs to the reasoning phase once reasoning began.
    fn record_chunk(&mut self, at: Nanos, reasoning: bool, answer: bool) {
        self.reasoning_events += u32::from(reasoning);
        self.chunks.push(Chunk {
            at,
            tokens: 1,
            reasoning: !answer && (reasoning || self.reasoning_events > 0),
        });
    }

    /// Reads the answer pieces of `texts` for think tags: `(reasoning, answer)` of the event.
    #[cold]
    fn think_pieces(&mut self, texts: &fastjson::Texts<'_>, mut reasoning: bool) -> (bool, bool) {
        let Some(mut think) = self.think.take() else {
            return (reasoning, true);
        };
        let mut scratch = std::mem::take(&mut think.scratch);
        let mut answer = false;
        for (piece, is_reasoning) in texts.iter_kinds() {
            scratch.clear();
            if is_reasoning || piece.push_to(&mut scratch).is_none() {
                continue;
            }
            let (r, a) = self.think_split(&mut think, &scratch);
            reasoning |= r;
            answer |= a;
        }
        think.scratch = scratch;
        self.think = Some(think);
        (reasoning, answer)
    }

    /// Splits one piece of answer text at its think tags (the one rule, [`ThinkTags::split`]);
    /// a close without an open makes every earlier chunk and all the text so far reasoning.
    fn think_split(&mut self, think: &mut ThinkTags, text: &str) -> (bool, bool) {
        let split = think.split(text, self.reasoning_text.as_mut());
        if split.closed_unopened {
            for c in &mut self.chunks {
                c.reasoning = true;
            }
            self.reasoning_events = u32::try_from(self.chunks.len()).unwrap_or(u32::MAX);
            if let (Some(t), Some(r)) = (&mut self.text, &mut self.reasoning_text) {
                let before: String = t.drain(..self.event_mark.min(t.len())).collect();
                r.insert_str(0, &before);
            }
        }
        (split.reasoning, split.answer)
    }

    /// Interprets one event that arrived at `at`. `Err` carries the failure outcome.
    pub(crate) fn on_event(&mut self, ev: &SseEvent, at: Nanos) -> Result<Flow, Outcome> {
        self.on_event_parts(ev.event.as_deref(), &ev.data, at)
    }

    /// [`StreamState::on_event`] on borrowed parts of an event.
    pub(crate) fn on_event_parts(
        &mut self,
        event: Option<&[u8]>,
        data: &[u8],
        at: Nanos,
    ) -> Result<Flow, Outcome> {
        let data = data.trim_ascii();
        if event == Some(b"error") {
            let message = match serde_json::from_slice::<serde_json::Value>(data) {
                Ok(v) => match &v {
                    serde_json::Value::Object(m) => match m.get("error") {
                        Some(e) => error_message(e),
                        None => error_message(&v),
                    },
                    _ => error_message(&v),
                },
                Err(_) => excerpt(data),
            };
            return Err(Outcome::StreamError { message });
        }
        if data.is_empty() {
            return Ok(Flow::Continue);
        }
        match self.backend {
            BackendKind::OpenAiCompletions | BackendKind::OpenAiChat => {
                if data == b"[DONE]" {
                    return Ok(Flow::Done);
                }
                self.on_openai(data, at)
            }
            BackendKind::Tgi => self.on_tgi(data, at),
            BackendKind::OpenAiResponses => self.on_responses(data, at),
            BackendKind::AnthropicMessages => self.on_messages(data, at),
            BackendKind::OpenAiEmbeddings | BackendKind::Rerank | BackendKind::CohereRerank => {
                let reply = crate::pooling::read(self.backend, data, self.inputs)?;
                self.pooled = Some(reply.items);
                self.usage_prompt = reply.prompt_tokens;
                self.finished = true;
                Ok(Flow::Done)
            }
        }
    }

    fn on_openai(&mut self, data: &[u8], at: Nanos) -> Result<Flow, Outcome> {
        if self.think.is_some() {
            self.event_mark = self.text.as_ref().map_or(0, String::len);
        }
        if self.fast {
            let mut ev = fastjson::OpenAiEvent::default();
            if let Some(text) = self.template.read(data) {
                let reasoning = self.template.reasoning();
                if ev.texts.push_kind(Some(text), reasoning).is_some() && self.push_texts(&ev.texts)
                {
                    self.scanned += 1;
                    self.templated += 1;
                    self.push_chunk(at, &ev.texts);
                    return Ok(Flow::Continue);
                }
                ev = fastjson::OpenAiEvent::default();
            }
            if fastjson::openai_into(data, &mut ev).is_some() && self.push_texts(&ev.texts) {
                self.template.learn(data, &ev);
                self.scanned += 1;
                if ev.finished {
                    self.finished = true;
                }
                if !ev.texts.is_empty() {
                    self.push_chunk(at, &ev.texts);
                }
                if let Some(p) = ev.prompt_tokens {
                    self.usage_prompt = Some(clamp_u32(p));
                }
                if let Some(c) = ev.completion_tokens {
                    self.usage_completion = Some(clamp_u32(c));
                }
                if let Some(r) = ev.reasoning_tokens {
                    self.usage_reasoning = Some(clamp_u32(r));
                }
                if let Some(c) = ev.cached_tokens {
                    self.usage_cached = Some(clamp_u32(c));
                }
                return Ok(Flow::Continue);
            }
        }
        self.on_openai_serde(data, at)
    }

    fn on_openai_serde(&mut self, data: &[u8], at: Nanos) -> Result<Flow, Outcome> {
        let ev: OaiEvent<'_> = serde_json::from_slice(data).map_err(|e| Outcome::Protocol {
            message: format!("malformed JSON in SSE event ({e}): {}", excerpt(data)),
        })?;
        if let Some(err) = ev.error.as_ref().filter(|e| !e.is_null()) {
            return Err(Outcome::StreamError {
                message: error_message(err),
            });
        }
        if ev.object.as_deref() == Some("error") {
            return Err(Outcome::StreamError {
                message: excerpt(ev.message.as_deref().unwrap_or("").as_bytes()),
            });
        }
        let (mut answer, mut reasoning, mut carried) = (false, false, false);
        for choice in ev.choices.iter().flatten() {
            let calls = [&choice.delta, &choice.message]
                .into_iter()
                .flatten()
                .filter_map(|d| d.tool_calls.as_ref())
                .next();
            let arguments = calls
                .and_then(|c| self.tool_call_piece(c))
                .map(|t| (t, false));
            let text = choice
                .text
                .as_deref()
                .map(|t| (t, false))
                .into_iter()
                .chain(arguments);
            let parts = [&choice.delta, &choice.message]
                .into_iter()
                .flatten()
                .flat_map(|d| {
                    [
                        (&d.reasoning_content, true),
                        (&d.reasoning, true),
                        (&d.content, false),
                    ]
                })
                .filter_map(|(p, r)| p.as_deref().map(|t| (t, r)));
            for (t, is_reasoning) in text.chain(parts) {
                if t.is_empty() {
                    continue;
                }
                carried = true;
                self.push_text(t, is_reasoning);
                let (r, a) = match self.think.take() {
                    Some(mut think) if !is_reasoning => {
                        let split = self.think_split(&mut think, t);
                        self.think = Some(think);
                        split
                    }
                    _ => (is_reasoning, !is_reasoning),
                };
                reasoning |= r;
                answer |= a;
            }
            if choice.finish_reason.is_some() {
                self.finished = true;
            }
        }
        if carried {
            self.record_chunk(at, reasoning, answer);
        }
        if let Some(u) = ev.usage {
            if let Some(p) = u.prompt_tokens {
                self.usage_prompt = Some(clamp_u32(p));
            }
            if let Some(c) = u.completion_tokens {
                self.usage_completion = Some(clamp_u32(c));
            }
            if let Some(r) = u.completion_tokens_details.and_then(|d| d.reasoning_tokens) {
                self.usage_reasoning = Some(clamp_u32(r));
            }
            if let Some(c) = u.prompt_tokens_details.and_then(|d| d.cached_tokens) {
                self.usage_cached = Some(clamp_u32(c));
            }
        }
        Ok(Flow::Continue)
    }

    fn on_tgi(&mut self, data: &[u8], at: Nanos) -> Result<Flow, Outcome> {
        if self.fast {
            if let Some(ev) = fastjson::tgi(data) {
                if let Some(flow) = self.apply_tgi(&ev, at) {
                    self.scanned += 1;
                    return Ok(flow);
                }
            }
        }
        self.on_tgi_serde(data, at)
    }

    /// The effect of a TGI event read by the scanner, exactly as [`Self::on_tgi_serde`];
    /// `None` (nothing changed) if its text fails to decode.
    fn apply_tgi(&mut self, ev: &fastjson::TgiEvent<'_>, at: Nanos) -> Option<Flow> {
        let mut texts = fastjson::Texts::default();
        let mut chunk = false;
        if let Some(tok) = &ev.token {
            if let Some(text) = tok.text.filter(|t| !t.is_empty()) {
                chunk = true;
                if !tok.special {
                    texts.push(Some(text))?;
                }
            }
        } else if let Some(g) = ev.generated_text.filter(|g| !g.is_empty()) {
            chunk = true;
            texts.push(Some(g))?;
        }
        if !self.push_texts(&texts) {
            return None;
        }
        if chunk {
            self.chunks.push(Chunk::answer(at, 1));
        }
        if let Some(d) = &ev.details {
            if let Some(n) = d.generated_tokens {
                self.usage_completion = Some(clamp_u32(n));
            }
            if let Some(n) = d.prefill.filter(|&n| n > 0) {
                self.usage_prompt = Some(clamp_u32(n as u64));
            }
        }
        if ev.generated_text.is_some() || ev.details.is_some() {
            self.finished = true;
            return Some(Flow::Done);
        }
        Some(Flow::Continue)
    }

    fn on_tgi_serde(&mut self, data: &[u8], at: Nanos) -> Result<Flow, Outcome> {
        let ev: TgiEvent<'_> = serde_json::from_slice(data).map_err(|e| Outcome::Protocol {
            message: format!("malformed JSON in SSE event ({e}): {}", excerpt(data)),
        })?;
        if let Some(err) = ev.error.as_ref().filter(|e| !e.is_null()) {
            return Err(Outcome::StreamError {
                message: error_message(err),
            });
        }
        if let Some(tok) = &ev.token {
            let text = tok.text.as_deref().unwrap_or("");
            if !text.is_empty() {
                self.chunks.push(Chunk::answer(at, 1));
                if !tok.special {
                    self.push_text(text, false);
                }
            }
        } else if let Some(g) = ev.generated_text.as_deref().filter(|g| !g.is_empty()) {
            // Non-streamed `/generate` reply: the whole text at once.
            self.chunks.push(Chunk::answer(at, 1));
            self.push_text(g, false);
        }
        if let Some(d) = &ev.details {
            if let Some(n) = d.generated_tokens {
                self.usage_completion = Some(clamp_u32(n));
            }
            if let Some(p) = &d.prefill {
                if !p.is_empty() {
                    self.usage_prompt = Some(clamp_u32(p.len() as u64));
                }
            }
        }
        if ev.generated_text.is_some() || ev.details.is_some() {
            self.finished = true;
            return Ok(Flow::Done);
        }
        Ok(Flow::Continue)
    }

    /// Reads a non-streamed JSON reply (a server that ignored `stream: true`).
    pub(crate) fn on_json_body(&mut self, body: &[u8], at: Nanos) -> Result<(), Outcome> {
        let data = body.trim_ascii();
        let flow = if data.first() == Some(&b'[') && self.backend == BackendKind::Tgi {
            // TGI's `/generate` may answer with a one-element array.
            let inner = data.get(1..data.len().saturating_sub(1)).unwrap_or(b"");
            self.on_tgi(inner.trim_ascii(), at)?
        } else {
            self.on_event_parts(None, data, at)?
        };
        let _ = flow;
        self.finished = true;
        Ok(())
    }
}

/// What a body piece did to the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Keep reading.
    More,
    /// The stream's final event (`[DONE]`, TGI's details) arrived.
    Done,
    /// The stream failed (in-stream error event, malformed SSE or JSON).
    Failed(Outcome),
}

/// Parses one response body as it arrives and records its content chunks, usage and end: the
/// per-chunk hot path of [`crate::Worker`], public so that it can be measured on its own.
#[derive(Debug)]
pub struct StreamRecorder {
    parser: SseParser,
    pub(crate) state: StreamState,
    json: Option<bytes::BytesMut>,
}

impl StreamRecorder {
    /// A recorder for `backend`. `keep_text` keeps the generated text for a tokenizer count;
    /// `json_reply` reads the body as one non-streamed JSON document instead of SSE.
    pub fn new(backend: BackendKind, keep_text: bool, json_reply: bool) -> Self {
        Self {
            parser: SseParser::new(),
            state: StreamState::new(backend, keep_text, 0),
            json: json_reply.then(bytes::BytesMut::new),
        }
    }

    /// Reads `<think>` tags in answer text (`--think-tags`, `think`): text from
    /// `<think>` to `</think>` is reasoning. Off by default.
    pub fn with_think_tags(mut self, enabled: bool) -> Self {
        self.state.think = enabled.then(Box::default);
        self
    }

    /// The request carried `inputs` inputs (pooling backends: the reply must answer each).
    pub fn with_inputs(mut self, inputs: usize) -> Self {
        self.state.inputs = inputs;
        self
    }

    /// Turns the allocation-free JSON scanner on (the default) or off. Off, every event is
    /// interpreted by serde_json alone: the reference the scanner is tested against, and the
    /// slower path it is benchmarked against. Results are identical either way.
    pub fn with_fast_path(mut self, enabled: bool) -> Self {
        self.state.fast = enabled;
        self
    }

    /// Feeds body bytes that arrived at `at` (taken before this call parses anything).
    pub fn on_data(&mut self, data: bytes::Bytes, at: Nanos) -> Progress {
        if let Some(buf) = &mut self.json {
            buf.extend_from_slice(&data);
            return Progress::More;
        }
        self.parser.feed(data);
        loop {
            match self.parser.next_event_ref() {
                Ok(None) => return Progress::More,
                Ok(Some(ev)) => match self.state.on_event_parts(ev.event, ev.data, at) {
                    Ok(Flow::Continue) => {}
                    Ok(Flow::Done) => return Progress::Done,
                    Err(outcome) => return Progress::Failed(outcome),
                },
                Err(e) => {
                    return Progress::Failed(Outcome::Protocol {
                        message: e.to_string(),
                    })
                }
            }
        }
    }

    /// The body ended at `at` without a final event so far: the outcome of the request.
    pub fn on_end(&mut self, at: Nanos) -> Outcome {
        if let Some(buf) = self.json.take() {
            return match self.state.on_json_body(&buf, at) {
                Ok(()) => Outcome::Completed,
                Err(outcome) => outcome,
            };
        }
        match self.parser.finish() {
            Err(e) => Outcome::Protocol {
                message: e.to_string(),
            },
            Ok(last) => {
                if let Some(ev) = last {
                    match self.state.on_event(&ev, at) {
                        Ok(Flow::Done) => return Outcome::Completed,
                        Ok(Flow::Continue) => {}
                        Err(outcome) => return outcome,
                    }
                }
                if self.state.finished {
                    // Ended after its finish reason without `[DONE]`: accepted.
                    Outcome::Completed
                } else {
                    Outcome::Protocol {
                        message:
                            "the stream ended before its final event ([DONE] or TGI's details)"
                                .into(),
                    }
                }
            }
        }
    }

    /// The content chunks recorded so far.
    pub fn chunks(&self) -> &[Chunk] {
        &self.state.chunks
    }

    /// Server-reported `(prompt, completion)` token counts, if any.
    pub fn usage(&self) -> (Option<u32>, Option<u32>) {
        (self.state.usage_prompt, self.state.usage_completion)
    }

    /// Server-reported reasoning tokens (`usage.completion_tokens_details.reasoning_tokens`),
    /// if any.
    pub fn usage_reasoning(&self) -> Option<u32> {
        self.state.usage_reasoning
    }

    /// Server-reported prompt tokens served from its prefix cache
    /// (`usage.prompt_tokens_details.cached_tokens`), if any.
    pub fn usage_cached(&self) -> Option<u32> {
        self.state.usage_cached
    }

    /// How many events carried reasoning text.
    pub fn reasoning_events(&self) -> u32 {
        self.state.reasoning_events
    }

    /// The reasoning text received so far, when the recorder keeps text (`keep_text`).
    pub fn reasoning_text(&self) -> Option<&str> {
        self.state.reasoning_text.as_deref()
    }

    /// How many JSON events the allocation-free scanner interpreted itself; the others (error
    /// bodies, malformed or unusual JSON) went to serde_json. For tests and benchmarks.
    pub fn scanned_events(&self) -> u64 {
        self.state.scanned
    }

    /// Of the scanned events, how many were read through the template of an earlier one.
    pub fn templated_events(&self) -> u64 {
        self.state.templated
    }

    /// The generated answer text received so far (reasoning text apart, see
    /// [`StreamRecorder::reasoning_text`]), when the recorder keeps it (`keep_text`).
    pub fn text(&self) -> Option<&str> {
        self.state.text.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn run(backend: BackendKind, stream: &'static [u8]) -> (StreamState, Result<Flow, Outcome>) {
        let mut st = StreamState::new(backend, true, 8);
        let mut p = SseParser::new();
        p.feed(Bytes::from_static(stream));
        let mut flow = Ok(Flow::Continue);
        let mut t = 0;
        while let Ok(Some(ev)) = p.next_event() {
            t += 10;
            flow = st.on_event(&ev, t);
            if !matches!(flow, Ok(Flow::Continue)) {
                break;
            }
        }
        (st, flow)
    }

    #[test]
    fn chat_role_only_chunk_is_not_a_token() {
        let (st, flow) = run(BackendKind::OpenAiChat, crate::sse::tests_data::VLLM_CHAT);
        assert_eq!(flow, Ok(Flow::Done));
        // Events at 10 (role only), 20, 30, 40 (usage), 50 ([DONE]).
        assert_eq!(st.chunks, vec![Chunk::answer(20, 1), Chunk::answer(30, 1)]);
        assert_eq!(st.text.as_deref(), Some("Hello wörld"));
        assert_eq!((st.usage_prompt, st.usage_completion), (Some(5), Some(2)));
        assert!(st.finished);
    }

    #[test]
    fn reasoning_chunks_are_told_from_answer_chunks() {
        for fast in [true, false] {
            let mut st = StreamState::new(BackendKind::OpenAiChat, true, 8);
            st.fast = fast;
            let mut p = SseParser::new();
            p.feed(Bytes::from_static(
                b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"reasoning_content\":\" so\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"reasoning\":\"ok\",\"content\":null}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"reasoning\":\"!\",\"content\":\"Hi\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\" there\"}}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":6,\"completion_tokens_details\":{\"reasoning_tokens\":4}}}\n\n\
data: [DONE]\n\n",
            ));
            let mut t = 0;
            while let Ok(Some(ev)) = p.next_event() {
                t += 10;
                if st.on_event(&ev, t) != Ok(Flow::Continue) {
                    break;
                }
            }
            // The first chunk (TTFT) is reasoning; the event with both parts is the first
            // answer chunk.
            let flags: Vec<(Nanos, bool)> = st.chunks.iter().map(|c| (c.at, c.reasoning)).collect();
            assert_eq!(
                flags,
                [(20, true), (30, true), (40, true), (50, false), (60, false)],
                "fast={fast}"
            );
            assert_eq!(st.reasoning_events, 4);
            assert_eq!(st.usage_reasoning, Some(4));
            assert_eq!(st.usage_completion, Some(6));
            assert_eq!(st.text.as_deref(), Some("Hi there"), "the answer only");
            assert_eq!(st.reasoning_text.as_deref(), Some("hmm sook!"));
        }
    }

    #[test]
    fn cached_tokens_are_read_on_both_paths() {
        // vLLM's usage with --enable-prompt-tokens-details (the simulator's with a prefix
        // cache pads the value with spaces); `null` details and a missing field say nothing.
        let cases: [(&[u8], Option<u32>); 4] = [
            (b"{\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":32}}}", Some(32)),
            (b"{\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"prompt_tokens_details\":{\"cached_tokens\":16        },\"completion_tokens\":2}}", Some(16)),
            (b"{\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2,\"prompt_tokens_details\":null}}", None),
            (b"{\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2,\"prompt_tokens_details\":{\"audio_tokens\":0}}}", None),
        ];
        for (event, want) in cases {
            let fast = fastjson::openai(event).expect("the fast path reads it");
            assert_eq!(fast.cached_tokens.map(|c| c as u32), want);
            for path in [true, false] {
                let mut st = StreamState::new(BackendKind::OpenAiChat, true, 8);
                st.fast = path;
                let mut p = SseParser::new();
                let mut body = b"data: ".to_vec();
                body.extend_from_slice(event);
                body.extend_from_slice(b"\n\ndata: [DONE]\n\n");
                p.feed(Bytes::from(body));
                let mut t = 0;
                while let Ok(Some(ev)) = p.next_event() {
                    t += 10;
                    if st.on_event(&ev, t) != Ok(Flow::Continue) {
                        break;
                    }
                }
                assert_eq!(st.usage_cached, want, "fast={path}");
                assert_eq!(st.usage_prompt, Some(40));
            }
        }
    }

    #[test]
    fn think_tags_split_content_on_both_paths() {
        let stream: &[u8] = b"data: {\"choices\":[{\"delta\":{\"content\":\"<think>\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"\\nhmm\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\" so\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"</think>\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"\\n\\n\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n\
data: [DONE]\n\n";
        let unopened: &[u8] = b"data: {\"choices\":[{\"text\":\"hmm\"}]}\n\n\
data: {\"choices\":[{\"text\":\" ok</think>\\n\\n\"}]}\n\n\
data: {\"choices\":[{\"text\":\"Hi\"}]}\n\n\
data: [DONE]\n\n";
        for fast in [true, false] {
            for think in [true, false] {
                let mut r = StreamRecorder::new(BackendKind::OpenAiChat, true, false)
                    .with_fast_path(fast)
                    .with_think_tags(think);
                assert_eq!(r.on_data(Bytes::from_static(stream), 5), Progress::Done);
                let flags: Vec<bool> = r.chunks().iter().map(|c| c.reasoning).collect();
                if think {
                    assert_eq!(flags, [true, true, true, true, true, false], "fast={fast}");
                    assert_eq!(r.reasoning_events(), 4);
                    assert_eq!(r.reasoning_text(), Some("\nhmm so"));
                } else {
                    assert!(flags.iter().all(|f| !f));
                    assert_eq!(r.reasoning_events(), 0);
                }
                // The answer text keeps the tags: it is what the server sent as content.
                assert_eq!(r.text(), Some("<think>\nhmm so</think>\n\nHi"));
                let mut r = StreamRecorder::new(BackendKind::OpenAiCompletions, true, false)
                    .with_fast_path(fast)
                    .with_think_tags(think);
                assert_eq!(r.on_data(Bytes::from_static(unopened), 5), Progress::Done);
                let flags: Vec<bool> = r.chunks().iter().map(|c| c.reasoning).collect();
                if think {
                    assert_eq!(flags, [true, true, false], "fast={fast}");
                    assert_eq!(r.reasoning_events(), 2);
                    assert_eq!(r.reasoning_text(), Some("hmm ok"));
                } else {
                    assert_eq!(flags, [false, false, false]);
                }
            }
        }
    }

    #[test]
    fn an_answer_only_stream_has_no_reasoning() {
        let (st, _) = run(BackendKind::OpenAiChat, crate::sse::tests_data::VLLM_CHAT);
        assert!(st.chunks.iter().all(|c| !c.reasoning));
        assert_eq!((st.reasoning_events, st.usage_reasoning), (0, None));
        assert_eq!(st.reasoning_text.as_deref(), Some(""));
    }

    #[test]
    fn in_stream_errors_are_stream_errors() {
        for s in [
            &b"data: {\"error\":{\"message\":\"overloaded\",\"code\":503}}\n\n"[..],
            b"data: {\"object\":\"error\",\"message\":\"overloaded\"}\n\n",
            b"event: error\ndata: {\"error\":\"overloaded\"}\n\n",
        ] {
            let mut st = StreamState::new(BackendKind::OpenAiCompletions, false, 0);
            let mut p = SseParser::new();
            p.feed(Bytes::copy_from_slice(s));
            let ev = p.next_event().ok().flatten().expect("one event");
            assert_eq!(
                st.on_event(&ev, 1),
                Err(Outcome::StreamError {
                    message: "overloaded".into()
                })
            );
        }
    }

    #[test]
    fn malformed_json_is_a_protocol_error() {
        let (_, flow) = run(
            BackendKind::OpenAiCompletions,
            b"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"te\n\n",
        );
        assert!(matches!(flow, Err(Outcome::Protocol { .. })), "{flow:?}");
        let (_, flow) = run(BackendKind::Tgi, b"data: not json\n\n");
        assert!(matches!(flow, Err(Outcome::Protocol { .. })), "{flow:?}");
    }

    #[test]
    fn tgi_tokens_and_details() {
        let (st, flow) = run(
            BackendKind::Tgi,
            b"data:{\"index\":1,\"token\":{\"id\":1,\"text\":\" Hi\",\"special\":false},\"generated_text\":null,\"details\":null}\n\n\
data:{\"index\":2,\"token\":{\"id\":2,\"text\":\"</s>\",\"special\":true},\"generated_text\":\" Hi\",\"details\":{\"finish_reason\":\"eos_token\",\"generated_tokens\":2}}\n\n",
        );
        assert_eq!(flow, Ok(Flow::Done));
        assert_eq!(st.chunks.len(), 2);
        assert_eq!(st.usage_completion, Some(2));
        assert_eq!(st.text.as_deref(), Some(" Hi"));
    }

    proptest::proptest! {
        /// Any bytes as event data: never a panic.
        #[test]
        fn arbitrary_event_data_never_panics(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
            json_ish in "\\{\"(choices|usage|error|token|details|generated_text)\":[\\[\\{\"0-9a-z:,\\]\\} ]{0,40}",
        ) {
            for backend in [BackendKind::OpenAiCompletions, BackendKind::OpenAiChat, BackendKind::Tgi] {
                let mut st = StreamState::new(backend, true, 0);
                for d in [Bytes::from(data.clone()), Bytes::from(json_ish.clone())] {
                    let _ = st.on_event(&SseEvent { event: None, data: d.clone() }, 1);
                    let _ = st.on_json_body(&d, 2);
                }
            }
        }
    }
}
