//! Response bodies, rendered into one buffer per request from precomputed pieces: no JSON
//! serializer and no allocation per token. A streaming body is rendered whole when the request
//! arrives (its length and faults are known then) and sliced into one frame per token; the
//! engine only decides *when* each slice may be written.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::faults::{FaultPlan, Terminal};
use crate::spec::{Drafts, StepCursor};

mod messages;
mod responses;
pub(crate) use messages::{anthropic_error, messages_full, messages_stream};
pub(crate) use responses::{responses_full, responses_stream};

/// One output word: a single token of the tokenizer, JSON-escaped, with its token id.
#[derive(Debug, Clone)]
pub(crate) struct Word {
    pub escaped: Box<str>,
    pub id: u32,
}

/// The output vocabulary. Words are single tokens that begin with a space, so their
/// concatenation tokenizes to one token per word.
#[derive(Debug, Clone)]
pub(crate) struct Words {
    items: Vec<Word>,
}

impl Words {
    /// `words` must not be empty; the caller guarantees it (the server falls back to a fixed
    /// list).
    pub(crate) fn new(words: Vec<(String, u32)>) -> Self {
        let items = words
            .into_iter()
            .map(|(w, id)| Word {
                escaped: escape(&w).into_boxed_str(),
                id,
            })
            .collect();
        Self { items }
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// The token id of output token `i` of a response whose words start at `start`.
    pub(crate) fn id_at(&self, start: usize, i: u32) -> u32 {
        self.get(start, i).id
    }

    #[inline]
    fn get(&self, start: usize, i: u32) -> &Word {
        // `items` is never empty (see `new`'s contract); modulo keeps the index in range.
        let n = self.items.len().max(1);
        &self.items[(start + i as usize) % n]
    }
}

/// JSON string escaping (without the quotes).
pub(crate) fn escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""));
    quoted[1..quoted.len() - 1].to_string()
}

/// Appends the decimal digits of `v`.
#[inline]
pub(crate) fn push_u64(buf: &mut Vec<u8>, mut v: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&tmp[i..]);
}

/// The OpenAI-style endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Oai {
    Completions,
    Chat,
}

/// What every rendering of one request shares.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub id: u64,
    pub created: u64,
    /// JSON-escaped model name.
    pub model: &'a str,
    pub words: &'a Words,
    pub word_start: usize,
    /// Output tokens.
    pub tokens: u32,
    /// `"length"` or `"stop"` (OpenAI); TGI's names are derived.
    pub finish_length: bool,
    pub prompt_tokens: u32,
    /// The first this many output tokens are reasoning (chat only; 0 otherwise).
    pub reasoning: u32,
    /// Whether and how the usage says the prompt tokens the prefix cache served.
    pub cached: CachedUsage,
    /// Speculative decoding's steps: the tokens of one step go out in one event (OpenAI and
    /// Responses streams; TGI's stream has one event per token by protocol). `None`: one token
    /// per step.
    pub drafts: Option<&'a Drafts>,
}

impl Ctx<'_> {
    /// Which output tokens end a step.
    fn steps(&self) -> StepCursor<'_> {
        self.drafts
            .map_or_else(StepCursor::single, |d| d.cursor(self.tokens))
    }
}

/// `usage.prompt_tokens_details.cached_tokens` in an OpenAI answer, as vLLM sends it with
/// `--enable-prompt-tokens-details`: only when the engine has a prefix cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CachedUsage {
    /// No `prompt_tokens_details`.
    Omit,
    /// The count, known when rendering (a whole answer, rendered after admission).
    Known(u32),
    /// A stream rendered before admission: [`CACHED_SLOT`] bytes the body fills in with the
    /// count when it writes the usage event ([`Pieces::fill_cached`]).
    Slot,
}

/// Bytes kept for a streamed `cached_tokens` value: a `u32`'s digits, padded with spaces
/// (JSON whitespace).
pub(crate) const CACHED_SLOT: usize = 10;

/// How a stream stops before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Reset,
    Stall,
}

/// A rendered streaming body.
#[derive(Debug)]
pub(crate) struct Rendered {
    pub data: Pieces,
    /// End offset of each frame; empty means one frame (the whole body, written at once).
    pub ends: Vec<u32>,
    /// Frames `0..token_frames` carry one token each; later frames (an error event) none.
    pub token_frames: u32,
    /// Before writing frame `k`, stop this way.
    pub stop: Option<(u32, Stop)>,
    /// Offset in `data` of the [`CachedUsage::Slot`] to fill in, if any.
    pub cached_slot: Option<usize>,
}

impl Rendered {
    pub(crate) fn frames(&self) -> u32 {
        if self.ends.is_empty() {
            1
        } else {
            self.ends.len() as u32
        }
    }
}

/// A response body in up to four pieces, written as one frame (one HTTP/1.1 chunk, the pieces
/// gathered by one `writev`).
#[derive(Debug, Default, Clone)]
pub(crate) struct Pieces {
    parts: [Bytes; 4],
    /// Parts before this one are used up.
    first: usize,
}

impl From<Bytes> for Pieces {
    fn from(b: Bytes) -> Self {
        Self {
            parts: [b, Bytes::new(), Bytes::new(), Bytes::new()],
            first: 0,
        }
    }
}

impl Pieces {
    fn live(&self) -> &[Bytes] {
        self.parts.get(self.first..).unwrap_or(&[])
    }

    /// Bytes left.
    pub(crate) fn len(&self) -> usize {
        self.live().iter().map(Bytes::len).sum()
    }

    /// Bytes `range` of what is left, as pieces of their own.
    pub(crate) fn slice(&self, range: std::ops::Range<usize>) -> Pieces {
        let mut out = Pieces::default();
        let mut at = 0;
        let mut n = 0;
        for p in self.live() {
            let (lo, hi) = (range.start.max(at), range.end.min(at + p.len()));
            if lo < hi {
                if let Some(slot) = out.parts.get_mut(n) {
                    *slot = p.slice(lo - at..hi - at);
                    n += 1;
                }
            }
            at += p.len();
        }
        out
    }

    /// These bytes with `value` written, padded with spaces, over the [`CACHED_SLOT`] bytes at
    /// `at` (one copy, once per streamed answer with a prefix cache).
    pub(crate) fn fill_cached(&self, at: usize, value: u32) -> Pieces {
        let mut v = self.live().concat();
        if let Some(slot) = v.get_mut(at..at + CACHED_SLOT) {
            let digits = value.to_string();
            slot.fill(b' ');
            slot[..digits.len()].copy_from_slice(digits.as_bytes());
        }
        Pieces::from(Bytes::from(v))
    }

    /// Non-empty pieces left.
    #[cfg(test)]
    pub(crate) fn pieces(&self) -> usize {
        self.live().iter().filter(|p| !p.is_empty()).count()
    }

    /// All bytes left, in one buffer.
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        self.live().concat()
    }
}

impl bytes::Buf for Pieces {
    fn remaining(&self) -> usize {
        self.len()
    }

    fn chunk(&self) -> &[u8] {
        self.live()
            .iter()
            .find(|p| !p.is_empty())
            .map_or(&[], |p| p.as_ref())
    }

    fn advance(&mut self, mut cnt: usize) {
        while let Some(p) = self.parts.get_mut(self.first) {
            let k = cnt.min(p.len());
            p.advance(k);
            cnt -= k;
            if !p.is_empty() {
                break;
            }
            self.first += 1;
            if cnt == 0 {
                break;
            }
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [std::io::IoSlice<'a>]) -> usize {
        let mut n = 0;
        for p in self.live().iter().filter(|p| !p.is_empty()) {
            let Some(slot) = dst.get_mut(n) else { break };
            *slot = std::io::IoSlice::new(p);
            n += 1;
        }
        n
    }
}

/// Copies of an [`EventCycle`]'s events lent to responses: a response writes its id and time
/// over the events it sends, in place, and sends them from there with no copy; the copy
/// comes back when hyper has written it.
#[derive(Debug, Default)]
struct CyclePool {
    /// Copies not on loan, each with the creation time written in all of its events.
    free: Mutex<Vec<(Vec<u8>, u64)>>,
    /// Copies made so far (at most [`POOLED_COPIES`]).
    made: AtomicUsize,
}

/// Copies of a cycle kept per endpoint (made as needed, about 50 kB each with the built-in
/// vocabulary): one per response still being written, which under a zero-delay benchmark is up
/// to one per connection (a pool of 8 overflowed with 64 wrk connections). Beyond them,
/// responses copy their events into a buffer of their own.
const POOLED_COPIES: usize = 128;

/// A pooled copy on loan to one response; returned when the last piece of it is dropped.
struct Lease {
    buf: Vec<u8>,
    created: u64,
    pool: Arc<CyclePool>,
}

impl AsRef<[u8]> for Lease {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Ok(mut free) = self.pool.free.lock() {
            free.push((std::mem::take(&mut self.buf), self.created));
        }
    }
}

const DONE: &[u8] = b"data: [DONE]\n\n";

fn frame_plan(ctx: &Ctx<'_>, plan: &FaultPlan) -> (u32, Option<(u32, Stop)>, bool) {
    // (tokens rendered, stop, error event after them)
    match plan.terminal {
        Some((k, Terminal::Reset)) => (
            k.min(ctx.tokens),
            Some((k.min(ctx.tokens), Stop::Reset)),
            false,
        ),
        Some((k, Terminal::Stall)) => (ctx.tokens, Some((k.min(ctx.tokens), Stop::Stall)), false),
        Some((k, Terminal::ErrorEvent)) => (k.min(ctx.tokens), None, true),
        None => (ctx.tokens, None, false),
    }
}

/// The two names an OpenAI streaming endpoint puts in its event head.
fn oai_names(kind: Oai) -> (&'static [u8], &'static [u8]) {
    match kind {
        Oai::Completions => (b"cmpl-", b"text_completion"),
        Oai::Chat => (b"chatcmpl-", b"chat.completion.chunk"),
    }
}

/// The head every event of one streamed OpenAI response starts with:
/// `data: {"id":"...","object":"...","created":N,"model":"M",`.
fn push_oai_head(b: &mut Vec<u8>, kind: Oai, id: u64, created: u64, model: &str) {
    let (id_prefix, object) = oai_names(kind);
    b.extend_from_slice(b"data: {\"id\":\"");
    b.extend_from_slice(id_prefix);
    push_hex(b, id);
    b.extend_from_slice(b"\",\"object\":\"");
    b.extend_from_slice(object);
    b.extend_from_slice(b"\",\"created\":");
    push_u64(b, created);
    b.extend_from_slice(b",\"model\":\"");
    b.extend_from_slice(model.as_bytes());
    b.extend_from_slice(b"\",");
}

/// The rest of a token event after its head; `finish` is `None` while more tokens follow.
fn push_oai_token(b: &mut Vec<u8>, kind: Oai, word: &str, finish: Option<&[u8]>) {
    push_oai_open(b, kind, false);
    b.extend_from_slice(word.as_bytes());
    push_oai_close(b, kind, finish);
}

/// The events of output tokens `range`, one step's: one event carrying their words, or two
/// when the step crosses from reasoning to answer; `finish` goes on the last. Each starts with
/// the response's event head.
fn push_step_events(
    b: &mut Vec<u8>,
    head_len: &mut usize,
    kind: Oai,
    ctx: &Ctx<'_>,
    range: std::ops::Range<u32>,
    finish: Option<&[u8]>,
) {
    let r = ctx.reasoning;
    let split = (range.start < r && r < range.end).then_some(r);
    let parts = match split {
        Some(r) => [range.start..r, r..range.end],
        None => [range.clone(), range.end..range.end],
    };
    for part in parts.into_iter().filter(|p| !p.is_empty()) {
        let last = part.end == range.end;
        event_head(b, head_len, kind, ctx);
        push_oai_open(b, kind, part.start < r);
        push_text(b, ctx, part);
        push_oai_close(b, kind, if last { finish } else { None });
    }
}

/// A token event's choice up to its text.
fn push_oai_open(b: &mut Vec<u8>, kind: Oai, reasoning: bool) {
    match kind {
        Oai::Completions => b.extend_from_slice(b"\"choices\":[{\"index\":0,\"text\":\""),
        Oai::Chat if reasoning => {
            b.extend_from_slice(b"\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"")
        }
        Oai::Chat => b.extend_from_slice(b"\"choices\":[{\"index\":0,\"delta\":{\"content\":\""),
    }
}

/// A token event's choice after its text: the finish reason (`null` while more follow).
fn push_oai_close(b: &mut Vec<u8>, kind: Oai, finish: Option<&[u8]>) {
    match kind {
        Oai::Completions => b.extend_from_slice(b"\",\"logprobs\":null,\"finish_reason\":"),
        Oai::Chat => b.extend_from_slice(b"\"},\"logprobs\":null,\"finish_reason\":"),
    }
    b.extend_from_slice(finish.unwrap_or(b"null"));
    match kind {
        Oai::Completions => b.extend_from_slice(b",\"stop_reason\":null}]}\n\n"),
        Oai::Chat => b.extend_from_slice(b"}]}\n\n"),
    }
}

/// Appends an event head. Every event of a response starts with the same head, so once the
/// first one is written (`head_len` > 0, at the start of `b`) it is copied.
fn event_head(b: &mut Vec<u8>, head_len: &mut usize, kind: Oai, ctx: &Ctx<'_>) {
    if *head_len > 0 && b.len() >= *head_len {
        b.extend_from_within(..*head_len);
    } else {
        let start = b.len();
        push_oai_head(b, kind, ctx.id, ctx.created, ctx.model);
        if start == 0 {
            *head_len = b.len();
        }
    }
}

/// The token events of one OpenAI streaming endpoint for every word of the output cycle, each
/// with a more-tokens-follow finish reason, rendered once at start with a placeholder id and
/// creation time. A response copies the run of events it needs in one piece and writes its
/// own id and time over the placeholders, instead of assembling every event from its parts.
#[derive(Debug)]
pub(crate) struct EventCycle {
    kind: Oai,
    model: Box<str>,
    /// Event `j` (word `j`) is `data[starts[j]..starts[j + 1]]`.
    data: Vec<u8>,
    starts: Vec<usize>,
    /// Offset of the 16 hex digits of the id in every event.
    id_at: usize,
    /// Offset and width of the decimal creation time in every event.
    created_at: usize,
    created_len: usize,
    /// Length of the shared event head.
    head_len: usize,
    /// The creation time written in `data`.
    created: u64,
    pool: Arc<CyclePool>,
}

impl EventCycle {
    /// Renders the cycle for `kind` and the JSON-escaped `model`, with creation times of as
    /// many digits as `created` has (responses whose time has another width are rendered
    /// event by event).
    pub(crate) fn new(kind: Oai, model: &str, words: &Words, created: u64) -> Self {
        let mut head = Vec::new();
        push_oai_head(&mut head, kind, 0, created, model);
        let (id_prefix, object) = oai_names(kind);
        let id_at = b"data: {\"id\":\"".len() + id_prefix.len();
        let created_at =
            id_at + 16 + b"\",\"object\":\"".len() + object.len() + b"\",\"created\":".len();
        let mut digits = Vec::new();
        push_u64(&mut digits, created);
        let n = words.len().max(1);
        let mut data = Vec::with_capacity(n * (head.len() + 120));
        let mut starts = Vec::with_capacity(n + 1);
        for j in 0..n {
            starts.push(data.len());
            data.extend_from_slice(&head);
            push_oai_token(&mut data, kind, &words.get(j, 0).escaped, None);
        }
        starts.push(data.len());
        Self {
            kind,
            model: model.into(),
            data,
            starts,
            id_at,
            created_at,
            created_len: digits.len(),
            head_len: head.len(),
            created,
            pool: Arc::default(),
        }
    }

    /// Whether this cycle renders `ctx`'s events for `kind`.
    fn fits(&self, kind: Oai, ctx: &Ctx<'_>) -> bool {
        self.kind == kind
            && ctx.reasoning == 0
            && ctx.drafts.is_none()
            && *self.model == *ctx.model
            && self.starts.len() == ctx.words.len().max(1) + 1
            && decimal_len(ctx.created) == self.created_len
    }

    /// Writes `ctx`'s id and time over the placeholders of cycle events `events`, held in
    /// `dst` from offset `at` on.
    fn patch(&self, dst: &mut [u8], at: usize, events: std::ops::Range<usize>, ctx: &Ctx<'_>) {
        // The id, the constant bytes up to the time, and the time: one span, written with one
        // copy per event.
        let mut span = [0u8; 128];
        let span_len = self.created_at + self.created_len - self.id_at;
        let (Some(head), Some(starts)) = (
            self.data.get(self.id_at..self.id_at + span_len),
            self.starts.get(events),
        ) else {
            return;
        };
        let Some(span) = span.get_mut(..span_len) else {
            return;
        };
        span.copy_from_slice(head);
        span[..16].copy_from_slice(&hex16(ctx.id));
        let mut digits = [0u8; 20];
        let mut v = ctx.created;
        for d in digits[20 - self.created_len..].iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        span[span_len - self.created_len..].copy_from_slice(&digits[20 - self.created_len..]);
        let Some(&from) = starts.first() else {
            return;
        };
        for &e in starts {
            let o = at + (e - from) + self.id_at;
            if let Some(d) = dst.get_mut(o..o + span_len) {
                d.copy_from_slice(span);
            }
        }
    }

    /// Appends the events of output tokens `0..n` of `ctx` (none of them the last token),
    /// and with `ends` the end offset of each.
    fn copy_events(&self, b: &mut Vec<u8>, ctx: &Ctx<'_>, n: u32, mut ends: Option<&mut Vec<u32>>) {
        let words = self.starts.len() - 1;
        let mut s = ctx.word_start % words;
        let mut left = n as usize;
        while left > 0 {
            let k = left.min(words - s);
            let from = self.starts[s];
            let base = b.len();
            b.extend_from_slice(&self.data[from..self.starts[s + k]]);
            self.patch(b, base, s..s + k, ctx);
            if let Some(ends) = ends.as_deref_mut() {
                ends.extend(
                    self.starts[s + 1..=s + k]
                        .iter()
                        .map(|e| (base + (e - from)) as u32),
                );
            }
            left -= k;
            s = 0;
        }
    }

    /// A copy of the cycle from the pool, or a new one while fewer than [`POOLED_COPIES`]
    /// exist.
    fn borrow_copy(&self) -> Option<(Vec<u8>, u64)> {
        if let Some(b) = self.pool.free.lock().ok().and_then(|mut f| f.pop()) {
            return Some(b);
        }
        self.pool
            .made
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |m| {
                (m < POOLED_COPIES).then_some(m + 1)
            })
            .ok()?;
        Some((self.data.clone(), self.created))
    }

    /// Writes `id` over the id placeholders of events `events` of a whole copy of the cycle.
    fn patch_ids(&self, dst: &mut [u8], events: std::ops::Range<usize>, id: u64) {
        let id = hex16(id);
        for &e in self.starts.get(events).unwrap_or(&[]) {
            let o = e + self.id_at;
            if let Some(d) = dst.get_mut(o..o + 16) {
                d.copy_from_slice(&id);
            }
        }
    }

    /// Renders a whole one-frame response (no faults in the stream) whose token events, but
    /// the last, are sent from a pooled copy of the cycle with `ctx`'s id and time written
    /// over them in place: nothing of their 200 bytes per token is copied. `None` when the
    /// events do not fit in one turn of the cycle or every copy is on loan.
    fn render_lent(&self, ctx: &Ctx<'_>, include_usage: bool) -> Option<Rendered> {
        let words = self.starts.len() - 1;
        let n = ctx.tokens.checked_sub(1)? as usize;
        if n == 0 || n > words {
            return None;
        }
        let (mut buf, mut created) = self.borrow_copy()?;
        if created != ctx.created {
            // A new second: the time goes into every event of this copy (the ids of all but
            // the events sent below are stale and never sent).
            self.patch(&mut buf, 0, 0..words, ctx);
            created = ctx.created;
        }
        let s = ctx.word_start % words;
        let first = s..(s + n).min(words);
        let second = 0..(s + n).saturating_sub(words);
        for r in [&first, &second] {
            self.patch_ids(&mut buf, r.clone(), ctx.id);
        }
        // The chat role chunk before; the last token's event, usage and [DONE] after.
        let mut edge = Vec::with_capacity(3 * (self.head_len + 200));
        let mut head_len = 0;
        if self.kind == Oai::Chat {
            push_role_chunk(&mut edge, &mut head_len, ctx);
        }
        let before = edge.len();
        push_last(
            &mut edge,
            &mut head_len,
            self.kind,
            ctx,
            include_usage,
            ctx.tokens - 1..ctx.tokens,
        );
        let edge = Bytes::from(edge);
        let lent = Bytes::from_owner(Lease {
            buf,
            created,
            pool: self.pool.clone(),
        });
        let span =
            |r: &std::ops::Range<usize>| match (self.starts.get(r.start), self.starts.get(r.end)) {
                (Some(&a), Some(&b)) if a < b => lent.slice(a..b),
                _ => Bytes::new(),
            };
        Some(Rendered {
            data: Pieces {
                parts: [
                    edge.slice(..before),
                    span(&first),
                    span(&second),
                    edge.slice(before..),
                ],
                first: 0,
            },
            ends: Vec::new(),
            token_frames: ctx.tokens,
            stop: None,
            cached_slot: None,
        })
    }
}

/// The 16 hex digits of a response id.
fn hex16(v: u64) -> [u8; 16] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 16];
    for (i, d) in out.iter_mut().enumerate() {
        *d = HEX[((v >> ((15 - i) * 4)) & 0xf) as usize];
    }
    out
}

/// The last step's event (tokens `last_step`, with the finish reason), the usage event when
/// asked for, and `[DONE]`.
fn push_last(
    b: &mut Vec<u8>,
    head_len: &mut usize,
    kind: Oai,
    ctx: &Ctx<'_>,
    include_usage: bool,
    last_step: std::ops::Range<u32>,
) -> Option<usize> {
    let finish: &[u8] = if ctx.finish_length {
        b"\"length\""
    } else {
        b"\"stop\""
    };
    push_step_events(b, head_len, kind, ctx, last_step, Some(finish));
    let mut slot = None;
    if include_usage {
        event_head(b, head_len, kind, ctx);
        b.extend_from_slice(b"\"choices\":[],\"usage\":");
        slot = push_usage(b, ctx.prompt_tokens, ctx.tokens, ctx.reasoning, ctx.cached);
        b.extend_from_slice(b"}\n\n");
    }
    b.extend_from_slice(DONE);
    slot
}

/// Number of decimal digits of `v`.
fn decimal_len(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Renders a streaming OpenAI response. `frames` asks for per-token frame boundaries (timed
/// mode, or faults that need them). With a `cycle` that fits, the token events before the last
/// are copied from it; the bytes are the same either way.
pub(crate) fn oai_stream(
    kind: Oai,
    ctx: &Ctx<'_>,
    include_usage: bool,
    plan: &FaultPlan,
    frames: bool,
    cycle: Option<&EventCycle>,
) -> Rendered {
    let (rendered_tokens, stop, error_event) = frame_plan(ctx, plan);
    let frames = frames || plan.touches_stream();
    if !frames && ctx.cached == CachedUsage::Omit {
        let lent = cycle
            .filter(|c| c.fits(kind, ctx))
            .and_then(|c| c.render_lent(ctx, include_usage));
        if let Some(r) = lent {
            return r;
        }
    }
    let per_token = ctx.model.len() + 200;
    let mut b: Vec<u8> = Vec::with_capacity(per_token * (ctx.tokens as usize + 3) + 64);
    let mut ends = Vec::with_capacity(if frames {
        rendered_tokens as usize + 1
    } else {
        0
    });
    let mut head_len = 0;
    let mut first = 0;
    let mut role_written = false;
    let mut cached_slot = None;
    if let Some(c) = cycle.filter(|c| plan.malformed_after.is_none() && c.fits(kind, ctx)) {
        if kind == Oai::Chat && rendered_tokens > 0 {
            push_role_chunk(&mut b, &mut head_len, ctx);
            role_written = true;
        }
        // Every rendered token but the last of the response, which carries the finish reason.
        first = if rendered_tokens == ctx.tokens {
            rendered_tokens.saturating_sub(1)
        } else {
            rendered_tokens
        };
        c.copy_events(&mut b, ctx, first, frames.then_some(&mut ends));
        if !b.is_empty() {
            head_len = c.head_len;
        }
    }
    let (mut steps, mut from) = (ctx.steps(), first);
    for i in first..rendered_tokens {
        if i == 0 && plan.malformed_after == Some(0) {
            malformed_oai(&mut b, &mut head_len, kind, ctx);
        }
        if kind == Oai::Chat && i == 0 && !role_written {
            push_role_chunk(&mut b, &mut head_len, ctx);
        }
        let last = i + 1 == ctx.tokens;
        // A step's tokens go out together, in its last token's frame (the frames before it
        // in the step are empty; the engine releases them together).
        if last {
            cached_slot = push_last(&mut b, &mut head_len, kind, ctx, include_usage, from..i + 1);
        } else if steps.ends_step(i) || i + 1 == rendered_tokens {
            push_step_events(&mut b, &mut head_len, kind, ctx, from..i + 1, None);
            from = i + 1;
        }
        if plan.malformed_after == Some(i + 1) && !last {
            malformed_oai(&mut b, &mut head_len, kind, ctx);
        }
        if frames {
            ends.push(b.len() as u32);
        }
    }
    if error_event {
        b.extend_from_slice(
            b"data: {\"error\":{\"message\":\"simulated fault: the engine failed after ",
        );
        push_u64(&mut b, u64::from(rendered_tokens));
        b.extend_from_slice(
            b" tokens\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}\n\n",
        );
        b.extend_from_slice(DONE);
        ends.push(b.len() as u32);
    }
    Rendered {
        data: Pieces::from(Bytes::from(b)),
        ends,
        token_frames: rendered_tokens,
        stop,
        cached_slot,
    }
}

/// The chat role-only first chunk, as vLLM sends it.
fn push_role_chunk(b: &mut Vec<u8>, head_len: &mut usize, ctx: &Ctx<'_>) {
    event_head(b, head_len, Oai::Chat, ctx);
    b.extend_from_slice(
        b"\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    );
}

fn malformed_oai(b: &mut Vec<u8>, head_len: &mut usize, kind: Oai, ctx: &Ctx<'_>) {
    event_head(b, head_len, kind, ctx);
    // Truncated JSON: the event ends in the middle of an object.
    b.extend_from_slice(b"\"choices\":[{\"index\":0,\"text\":\"\n\n");
}

fn push_hex(b: &mut Vec<u8>, v: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..16).rev() {
        b.push(HEX[((v >> (shift * 4)) & 0xf) as usize]);
    }
}

/// The usage object; with `completion_tokens_details.reasoning_tokens` when `reasoning` > 0
/// and `prompt_tokens_details.cached_tokens` as `cached` says. Returns the offset of a
/// [`CachedUsage::Slot`] left to fill in.
fn push_usage(
    b: &mut Vec<u8>,
    prompt: u32,
    completion: u32,
    reasoning: u32,
    cached: CachedUsage,
) -> Option<usize> {
    b.extend_from_slice(b"{\"prompt_tokens\":");
    push_u64(b, u64::from(prompt));
    b.extend_from_slice(b",\"total_tokens\":");
    push_u64(b, u64::from(prompt) + u64::from(completion));
    b.extend_from_slice(b",\"completion_tokens\":");
    push_u64(b, u64::from(completion));
    if reasoning > 0 {
        b.extend_from_slice(b",\"completion_tokens_details\":{\"reasoning_tokens\":");
        push_u64(b, u64::from(reasoning));
        b.push(b'}');
    }
    let mut slot = None;
    if cached != CachedUsage::Omit {
        b.extend_from_slice(b",\"prompt_tokens_details\":{\"cached_tokens\":");
        match cached {
            CachedUsage::Known(n) => push_u64(b, u64::from(n)),
            _ => {
                slot = Some(b.len());
                b.extend_from_slice(b"0         ");
            }
        }
        b.push(b'}');
    }
    b.push(b'}');
    slot
}

/// The words of output tokens `range`, concatenated.
fn push_text(b: &mut Vec<u8>, ctx: &Ctx<'_>, range: std::ops::Range<u32>) {
    for i in range {
        b.extend_from_slice(ctx.words.get(ctx.word_start, i).escaped.as_bytes());
    }
}

/// A non-streaming OpenAI response.
pub(crate) fn oai_full(kind: Oai, ctx: &Ctx<'_>) -> Bytes {
    let mut b: Vec<u8> = Vec::with_capacity(ctx.tokens as usize * 12 + 400);
    b.extend_from_slice(b"{\"id\":\"");
    match kind {
        Oai::Completions => b.extend_from_slice(b"cmpl-"),
        Oai::Chat => b.extend_from_slice(b"chatcmpl-"),
    }
    push_hex(&mut b, ctx.id);
    b.extend_from_slice(b"\",\"object\":\"");
    match kind {
        Oai::Completions => b.extend_from_slice(b"text_completion"),
        Oai::Chat => b.extend_from_slice(b"chat.completion"),
    }
    b.extend_from_slice(b"\",\"created\":");
    push_u64(&mut b, ctx.created);
    b.extend_from_slice(b",\"model\":\"");
    b.extend_from_slice(ctx.model.as_bytes());
    match kind {
        Oai::Completions => b.extend_from_slice(b"\",\"choices\":[{\"index\":0,\"text\":\""),
        Oai::Chat => {
            b.extend_from_slice(
                b"\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",",
            );
            if ctx.reasoning > 0 {
                b.extend_from_slice(b"\"reasoning_content\":\"");
                push_text(&mut b, ctx, 0..ctx.reasoning);
                b.extend_from_slice(b"\",");
            }
            b.extend_from_slice(b"\"content\":\"");
        }
    }
    let answer_from = if kind == Oai::Chat { ctx.reasoning } else { 0 };
    push_text(&mut b, ctx, answer_from..ctx.tokens);
    match kind {
        Oai::Completions => b.extend_from_slice(b"\",\"logprobs\":null,\"finish_reason\":"),
        Oai::Chat => b.extend_from_slice(b"\"},\"logprobs\":null,\"finish_reason\":"),
    }
    if ctx.finish_length {
        b.extend_from_slice(b"\"length\"");
    } else {
        b.extend_from_slice(b"\"stop\"");
    }
    if kind == Oai::Completions {
        b.extend_from_slice(b",\"stop_reason\":null");
    }
    b.extend_from_slice(b"}],\"usage\":");
    push_usage(
        &mut b,
        ctx.prompt_tokens,
        ctx.tokens,
        ctx.reasoning,
        ctx.cached,
    );
    b.push(b'}');
    Bytes::from(b)
}

fn tgi_finish(ctx: &Ctx<'_>) -> &'static [u8] {
    if ctx.finish_length {
        b"\"length\""
    } else {
        b"\"eos_token\""
    }
}

fn push_tgi_details(b: &mut Vec<u8>, ctx: &Ctx<'_>) {
    b.extend_from_slice(b"{\"finish_reason\":");
    b.extend_from_slice(tgi_finish(ctx));
    b.extend_from_slice(b",\"generated_tokens\":");
    push_u64(b, u64::from(ctx.tokens));
    b.extend_from_slice(b",\"seed\":null}");
}

/// A TGI `/generate_stream` response (`data:` without a space, as TGI writes it).
pub(crate) fn tgi_stream(ctx: &Ctx<'_>, details: bool, plan: &FaultPlan, frames: bool) -> Rendered {
    let (rendered_tokens, stop, error_event) = frame_plan(ctx, plan);
    let frames = frames || plan.touches_stream();
    let mut b: Vec<u8> =
        Vec::with_capacity(140 * (ctx.tokens as usize + 2) + 12 * ctx.tokens as usize);
    let mut ends = Vec::with_capacity(if frames {
        rendered_tokens as usize + 1
    } else {
        0
    });
    for i in 0..rendered_tokens {
        if i == 0 && plan.malformed_after == Some(0) {
            b.extend_from_slice(b"data:{\"index\":0,\"token\":{\"id\":\n\n");
        }
        let w = ctx.words.get(ctx.word_start, i);
        let last = i + 1 == ctx.tokens;
        b.extend_from_slice(b"data:{\"index\":");
        push_u64(&mut b, u64::from(i) + 1);
        b.extend_from_slice(b",\"token\":{\"id\":");
        push_u64(&mut b, u64::from(w.id));
        b.extend_from_slice(b",\"text\":\"");
        b.extend_from_slice(w.escaped.as_bytes());
        b.extend_from_slice(b"\",\"logprob\":-0.1,\"special\":false},\"generated_text\":");
        if last {
            b.push(b'"');
            push_text(&mut b, ctx, 0..ctx.tokens);
            b.extend_from_slice(b"\",\"details\":");
            if details {
                push_tgi_details(&mut b, ctx);
            } else {
                b.extend_from_slice(b"null");
            }
        } else {
            b.extend_from_slice(b"null,\"details\":null");
        }
        b.extend_from_slice(b",\"top_tokens\":null}\n\n");
        if plan.malformed_after == Some(i + 1) && !last {
            b.extend_from_slice(b"data:{\"index\":0,\"token\":{\"id\":\n\n");
        }
        if frames {
            ends.push(b.len() as u32);
        }
    }
    if error_event {
        b.extend_from_slice(b"data:{\"error\":\"simulated fault: the engine failed after ");
        push_u64(&mut b, u64::from(rendered_tokens));
        b.extend_from_slice(b" tokens\",\"error_type\":\"generation\"}\n\n");
        ends.push(b.len() as u32);
    }
    Rendered {
        data: Pieces::from(Bytes::from(b)),
        ends,
        token_frames: rendered_tokens,
        stop,
        cached_slot: None,
    }
}

/// A TGI `/generate` response.
pub(crate) fn tgi_full(ctx: &Ctx<'_>, details: bool) -> Bytes {
    let mut b: Vec<u8> = Vec::with_capacity(ctx.tokens as usize * 12 + 200);
    b.extend_from_slice(b"{\"generated_text\":\"");
    push_text(&mut b, ctx, 0..ctx.tokens);
    b.push(b'"');
    if details {
        b.extend_from_slice(b",\"details\":");
        push_tgi_details(&mut b, ctx);
    }
    b.push(b'}');
    Bytes::from(b)
}

/// An OpenAI-style error body (`{"error": {"message", "type", "param", "code"}}`).
pub(crate) fn oai_error(status: u16, message: &str) -> Bytes {
    let kind = match status {
        400 => "BadRequestError",
        404 => "NotFoundError",
        405 => "MethodNotAllowed",
        413 => "RequestTooLarge",
        429 => "RateLimitError",
        503 => "ServiceUnavailableError",
        _ => "InternalServerError",
    };
    let body = serde_json::json!({
        "error": {"message": message, "type": kind, "param": null, "code": status}
    });
    Bytes::from(body.to_string())
}

/// A TGI error body (`{"error": ..., "error_type": ...}`).
pub(crate) fn tgi_error(status: u16, message: &str) -> Bytes {
    let kind = match status {
        400 | 422 => "validation",
        429 => "overloaded",
        503 => "overloaded",
        _ => "generation",
    };
    let body = serde_json::json!({"error": message, "error_type": kind});
    Bytes::from(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Words {
        Words::new(vec![
            (" a".into(), 1),
            (" \"q\"".into(), 2),
            (" b".into(), 3),
        ])
    }

    fn ctx(words: &Words, tokens: u32) -> Ctx<'_> {
        Ctx {
            id: 255,
            created: 1_700_000_000,
            model: "m",
            words,
            word_start: 1,
            tokens,
            finish_length: true,
            prompt_tokens: 7,
            reasoning: 0,
            cached: CachedUsage::Omit,
            drafts: None,
        }
    }

    /// The text of every content event of each frame of `r` (reasoning or answer).
    fn frame_texts(r: &Rendered) -> Vec<Vec<String>> {
        let data = r.data.to_vec();
        let mut from = 0;
        r.ends
            .iter()
            .map(|&e| {
                let frame = &data[from..e as usize];
                from = e as usize;
                events(frame)
                    .iter()
                    .filter_map(|ev| {
                        serde_json::from_str::<serde_json::Value>(ev.split_once("data: ")?.1).ok()
                    })
                    .filter_map(|v| {
                        let c = v.pointer("/choices/0")?;
                        let d = c.get("delta").unwrap_or(c);
                        ["text", "content", "reasoning_content"]
                            .iter()
                            .find_map(|k| d.get(*k)?.as_str().filter(|t| !t.is_empty()))
                            .map(str::to_string)
                    })
                    .collect()
            })
            .collect()
    }

    /// Speculative decoding: a step's tokens travel in one event, in its last token's frame
    /// (the frames before it in the step are empty); a step crossing from reasoning to answer
    /// has one event of each; the bytes carry the same words in the same order.
    #[test]
    fn a_steps_tokens_go_in_one_event() {
        let w = words();
        // Tokens 0 | 1 2 3 | 4 | 5 6: steps of 1 (prefill), 3, 1, 2.
        let d = Drafts::of(&[2, 0, 3]);
        let base = ctx(&w, 7);
        let c = Ctx {
            drafts: Some(&d),
            ..base
        };
        let word = |i: u32| w.get(base.word_start, i).escaped.replace("\\\"", "\"");
        let joined = |r: std::ops::Range<u32>| r.map(word).collect::<String>();
        for kind in [Oai::Completions, Oai::Chat] {
            let r = oai_stream(kind, &c, true, &FaultPlan::default(), true, None);
            assert_eq!(r.ends.len(), 7, "one frame per token");
            let t = frame_texts(&r);
            let want: Vec<Vec<String>> = vec![
                vec![joined(0..1)],
                vec![],
                vec![],
                vec![joined(1..4)],
                vec![joined(4..5)],
                vec![],
                vec![joined(5..7)],
            ];
            assert_eq!(t, want, "{kind:?}");
            let plain = oai_stream(kind, &base, true, &FaultPlan::default(), true, None);
            assert_eq!(
                frame_texts(&plain).concat().concat(),
                t.concat().concat(),
                "the same words"
            );
        }
        let reasoning = Ctx { reasoning: 2, ..c };
        let r = oai_stream(
            Oai::Chat,
            &reasoning,
            false,
            &FaultPlan::default(),
            true,
            None,
        );
        let ev = String::from_utf8(r.data.to_vec()).expect("utf8");
        let step = &ev[r.ends[2] as usize..r.ends[3] as usize];
        assert_eq!(step.matches("\"reasoning_content\"").count(), 1, "{step}");
        assert_eq!(step.matches("\"content\"").count(), 1, "{step}");
        // The Responses API too.
        let r = responses_stream(&c, &FaultPlan::default(), true);
        let data = r.data.to_vec();
        let step =
            String::from_utf8(data[r.ends[2] as usize..r.ends[3] as usize].to_vec()).expect("utf8");
        assert_eq!(step.matches("output_text.delta\n").count(), 1, "{step}");
        assert_eq!(r.ends[1], r.ends[0], "an empty frame inside a step");
    }

    #[test]
    fn a_reasoning_phase_comes_first_in_reasoning_content_and_in_usage() {
        let w = words();
        let c = Ctx {
            reasoning: 2,
            ..ctx(&w, 4)
        };
        for frames in [false, true] {
            let r = oai_stream(Oai::Chat, &c, true, &FaultPlan::default(), frames, None);
            let ev = events(&r.data.to_vec());
            let kinds: Vec<(bool, bool)> = ev
                .iter()
                .filter_map(|e| serde_json::from_str::<serde_json::Value>(&e[6..]).ok())
                .filter_map(|v| {
                    let d = v.pointer("/choices/0/delta")?.clone();
                    let r = d.get("reasoning_content").is_some();
                    let a = d
                        .get("content")
                        .and_then(|c| c.as_str())
                        .is_some_and(|c| !c.is_empty());
                    (r || a).then_some((r, a))
                })
                .collect();
            assert_eq!(
                kinds,
                [(true, false), (true, false), (false, true), (false, true)]
            );
            let usage = ev.iter().find(|e| e.contains("\"usage\"")).expect("usage");
            assert!(
                usage.contains("\"completion_tokens_details\":{\"reasoning_tokens\":2}"),
                "{usage}"
            );
        }
        let full = oai_full(Oai::Chat, &c);
        let v: serde_json::Value = serde_json::from_slice(&full).expect("json");
        let msg = v.pointer("/choices/0/message").expect("message");
        assert_eq!(msg["reasoning_content"], " \"q\" b");
        assert_eq!(msg["content"], " a \"q\"");
        assert_eq!(
            v.pointer("/usage/completion_tokens_details/reasoning_tokens"),
            Some(&serde_json::json!(2))
        );
    }

    fn events(data: &[u8]) -> Vec<String> {
        String::from_utf8(data.to_vec())
            .expect("utf8")
            .split("\n\n")
            .filter(|s| !s.is_empty())
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn chat_stream_is_valid_json_per_event_with_role_usage_and_done() {
        let w = words();
        let r = oai_stream(
            Oai::Chat,
            &ctx(&w, 4),
            true,
            &FaultPlan::default(),
            true,
            None,
        );
        assert_eq!(r.ends.len(), 4);
        assert_eq!(r.token_frames, 4);
        let ev = events(&r.data.to_vec());
        assert_eq!(ev.len(), 1 + 4 + 1 + 1);
        let mut text = String::new();
        for (i, e) in ev.iter().enumerate() {
            let payload = e.strip_prefix("data: ").expect("data prefix");
            if i == ev.len() - 1 {
                assert_eq!(payload, "[DONE]");
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(payload).expect("json");
            assert_eq!(v["id"], "chatcmpl-00000000000000ff");
            assert_eq!(v["model"], "m");
            if i == 0 {
                assert_eq!(v["choices"][0]["delta"]["role"], "assistant");
            } else if i <= 4 {
                text.push_str(v["choices"][0]["delta"]["content"].as_str().expect("c"));
                let fin = &v["choices"][0]["finish_reason"];
                assert_eq!(fin.is_null(), i < 4);
            } else {
                assert_eq!(v["usage"]["prompt_tokens"], 7);
                assert_eq!(v["usage"]["completion_tokens"], 4);
                assert_eq!(v["usage"]["total_tokens"], 11);
            }
        }
        assert_eq!(text, " \"q\" b a \"q\"");
        // Frame 0 holds the role chunk and the first token.
        assert_eq!(events(&r.data.to_vec()[..r.ends[0] as usize]).len(), 2);
    }

    #[test]
    fn event_cycle_renders_the_same_bytes_as_event_by_event() {
        let w = words();
        let cycles = [
            EventCycle::new(Oai::Completions, "m", &w, 1_700_000_000),
            EventCycle::new(Oai::Chat, "m", &w, 1_700_000_000),
        ];
        let plans = [
            FaultPlan::default(),
            FaultPlan {
                terminal: Some((0, Terminal::Reset)),
                ..FaultPlan::default()
            },
            FaultPlan {
                terminal: Some((3, Terminal::Reset)),
                ..FaultPlan::default()
            },
            FaultPlan {
                terminal: Some((2, Terminal::Stall)),
                ..FaultPlan::default()
            },
            FaultPlan {
                terminal: Some((0, Terminal::ErrorEvent)),
                ..FaultPlan::default()
            },
            FaultPlan {
                terminal: Some((4, Terminal::ErrorEvent)),
                ..FaultPlan::default()
            },
            FaultPlan {
                malformed_after: Some(1),
                ..FaultPlan::default()
            },
        ];
        let mut fast = 0;
        let mut lent = 0;
        for (kind, cycle) in [(Oai::Completions, &cycles[0]), (Oai::Chat, &cycles[1])] {
            for tokens in [1, 2, 3, 4, 7, 11] {
                for word_start in 0..3 {
                    // The second time has another width than the cycle's: rendered event
                    // by event.
                    for created in [1_700_000_123, 99] {
                        for id in [0, 255, u64::MAX] {
                            let mut c = ctx(&w, tokens);
                            c.word_start = word_start;
                            c.created = created;
                            c.id = id;
                            c.finish_length = tokens % 2 == 0;
                            fast += usize::from(cycle.fits(kind, &c));
                            for plan in &plans {
                                for usage in [false, true] {
                                    for frames in [false, true] {
                                        let a = oai_stream(kind, &c, usage, plan, frames, None);
                                        let b =
                                            oai_stream(kind, &c, usage, plan, frames, Some(cycle));
                                        let what = format!(
                                            "{kind:?} tokens {tokens} start {word_start} \
                                             created {created} {plan:?} usage {usage}"
                                        );
                                        assert_eq!(
                                            String::from_utf8_lossy(&a.data.to_vec()),
                                            String::from_utf8_lossy(&b.data.to_vec()),
                                            "{what}"
                                        );
                                        lent += usize::from(b.data.pieces() > 1);
                                        assert_eq!(a.ends, b.ends, "{what}");
                                        assert_eq!(a.token_frames, b.token_frames, "{what}");
                                        assert_eq!(a.stop, b.stop, "{what}");
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(fast, 2 * 6 * 3 * 3, "the cycle fits every 10-digit time");
        // 2 to 4 tokens (1 to 3 events from the 3-word cycle), 10-digit times, no faults, one
        // frame: sent from a pooled copy, which came back each time.
        assert_eq!(lent, 2 * 3 * 3 * 3 * 2, "responses sent from a pooled copy");
        for c in &cycles {
            assert_eq!(c.pool.made.load(Ordering::Relaxed), 1);
            assert_eq!(c.pool.free.lock().expect("pool").len(), 1);
        }
        // Another model or another endpoint's cycle never fits.
        let c = ctx(&w, 3);
        assert!(
            !EventCycle::new(Oai::Completions, "other", &w, 1_700_000_000)
                .fits(Oai::Completions, &c)
        );
        assert!(!cycles[1].fits(Oai::Completions, &c));
    }

    #[test]
    fn pooled_copies_are_bounded_and_reused_with_each_response_own_id() {
        let w = words();
        let cycle = EventCycle::new(Oai::Completions, "m", &w, 1_700_000_000);
        let plan = FaultPlan::default();
        let mut held = Vec::new();
        for id in 0..(POOLED_COPIES as u64 + 5) {
            let mut c = ctx(&w, 3);
            c.id = id;
            let r = oai_stream(Oai::Completions, &c, true, &plan, false, Some(&cycle));
            let reference = oai_stream(Oai::Completions, &c, true, &plan, false, None);
            assert_eq!(r.data.to_vec(), reference.data.to_vec());
            // Beyond the pool's size, responses get a buffer of their own.
            assert_eq!(r.data.pieces() > 1, id < POOLED_COPIES as u64, "{id}");
            held.push(r);
        }
        assert_eq!(cycle.pool.made.load(Ordering::Relaxed), POOLED_COPIES);
        drop(held);
        assert_eq!(cycle.pool.free.lock().expect("pool").len(), POOLED_COPIES);
        // A reused copy carries the new response's id, not the last one's.
        let mut c = ctx(&w, 3);
        c.id = 0xabc;
        let r = oai_stream(Oai::Completions, &c, false, &plan, false, Some(&cycle));
        let reference = oai_stream(Oai::Completions, &c, false, &plan, false, None);
        assert_eq!(r.data.to_vec(), reference.data.to_vec());
        drop(r);
        // The next second, then back: the copy's time follows.
        for created in [1_700_000_001, 1_700_000_000] {
            c.created = created;
            c.word_start = 2;
            let r = oai_stream(Oai::Completions, &c, false, &plan, false, Some(&cycle));
            assert!(r.data.pieces() > 1);
            let reference = oai_stream(Oai::Completions, &c, false, &plan, false, None);
            assert_eq!(r.data.to_vec(), reference.data.to_vec());
        }
        assert_eq!(cycle.pool.made.load(Ordering::Relaxed), POOLED_COPIES);
    }

    #[test]
    fn pieces_are_one_buffer_to_hyper() {
        use bytes::Buf;
        let mut p = Pieces {
            parts: [
                Bytes::from_static(b"ab"),
                Bytes::new(),
                Bytes::from_static(b"cde"),
                Bytes::from_static(b"f"),
            ],
            first: 0,
        };
        assert_eq!(p.remaining(), 6);
        assert_eq!(p.slice(1..5).to_vec(), b"bcde");
        let mut io = [std::io::IoSlice::new(&[]); 4];
        assert_eq!(p.chunks_vectored(&mut io), 3);
        assert_eq!(p.chunk(), b"ab");
        p.advance(3);
        assert_eq!((p.remaining(), p.chunk()), (3, &b"de"[..]));
        p.advance(2);
        assert_eq!(p.chunk(), b"f");
        p.advance(1);
        assert_eq!((p.remaining(), p.chunk()), (0, &b""[..]));
        let mut q = Pieces::from(Bytes::from_static(b"xyz"));
        assert_eq!(q.copy_to_bytes(3), Bytes::from_static(b"xyz"));
        assert!(!q.has_remaining());
    }

    #[test]
    fn completions_full_and_tgi_are_valid_json() {
        let w = words();
        let c = ctx(&w, 3);
        let v: serde_json::Value =
            serde_json::from_slice(&oai_full(Oai::Completions, &c)).expect("j");
        assert_eq!(v["choices"][0]["text"], " \"q\" b a");
        assert_eq!(v["usage"]["completion_tokens"], 3);
        let v: serde_json::Value = serde_json::from_slice(&oai_full(Oai::Chat, &c)).expect("j");
        assert_eq!(v["choices"][0]["message"]["content"], " \"q\" b a");
        let v: serde_json::Value = serde_json::from_slice(&tgi_full(&c, true)).expect("j");
        assert_eq!(v["details"]["generated_tokens"], 3);
        let r = tgi_stream(&c, true, &FaultPlan::default(), false);
        assert!(r.ends.is_empty());
        let ev = events(&r.data.to_vec());
        assert_eq!(ev.len(), 3);
        let last: serde_json::Value =
            serde_json::from_str(ev[2].strip_prefix("data:").expect("p")).expect("j");
        assert_eq!(last["generated_text"], " \"q\" b a");
        assert_eq!(last["details"]["generated_tokens"], 3);
        assert_eq!(last["token"]["id"], 1);
    }

    #[test]
    fn faults_shape_the_stream() {
        let w = words();
        let c = ctx(&w, 5);
        let plan = FaultPlan {
            terminal: Some((2, Terminal::ErrorEvent)),
            malformed_after: Some(1),
            ..FaultPlan::default()
        };
        let r = oai_stream(Oai::Completions, &c, false, &plan, false, None);
        assert_eq!(r.token_frames, 2);
        assert_eq!(r.ends.len(), 3);
        let ev = events(&r.data.to_vec());
        // token, malformed, token, error, DONE
        assert_eq!(ev.len(), 5);
        assert!(serde_json::from_str::<serde_json::Value>(&ev[1][6..]).is_err());
        assert!(ev[3].starts_with("data: {\"error\":"));
        assert_eq!(ev[4], "data: [DONE]");
        let plan = FaultPlan {
            terminal: Some((3, Terminal::Reset)),
            ..FaultPlan::default()
        };
        let r = oai_stream(Oai::Completions, &c, false, &plan, false, None);
        assert_eq!((r.token_frames, r.stop), (3, Some((3, Stop::Reset))));
        let plan = FaultPlan {
            terminal: Some((3, Terminal::Stall)),
            ..FaultPlan::default()
        };
        let r = tgi_stream(&c, false, &plan, false);
        assert_eq!((r.token_frames, r.stop), (5, Some((3, Stop::Stall))));
    }

    #[test]
    fn numbers_format() {
        let mut b = Vec::new();
        push_u64(&mut b, 0);
        b.push(b' ');
        push_u64(&mut b, u64::MAX);
        assert_eq!(b, b"0 18446744073709551615");
    }
}
