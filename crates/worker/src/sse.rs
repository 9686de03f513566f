//! Incremental Server-Sent Events parser.
//!
//! Fed with body chunks as they arrive, it yields complete events. Lines that lie wholly inside
//! one chunk are read in place: [`SseParser::next_event_ref`] lends the event's data as a slice
//! of that chunk (no copy, no reference count touched), [`SseParser::next_event`] as a [`Bytes`]
//! slice of it. Only a line split across chunks, or an event with several `data:` lines, is
//! copied. Correct for any split of the input into chunks, for `\r\n`, `\n` and lone `\r` line
//! ends, comments (`: keep-alive`), `event:` lines and multi-line `data:` (joined with `\n`, as
//! the WHATWG specification says).
//!
//! The parser knows nothing about `[DONE]` or JSON: that is the backend's business.

use bytes::{Bytes, BytesMut};

/// Default cap on one line or one event's data: far above any real event (a 128k-token
/// completion sent as one event is about 1 MB), low enough that a server streaming garbage
/// without line breaks cannot exhaust memory.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 64 << 20;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if one was given.
    pub event: Option<Bytes>,
    /// The `data:` lines joined with `\n`.
    pub data: Bytes,
}

/// One dispatched event, borrowed from the parser until its next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEventRef<'a> {
    /// The `event:` field, if one was given.
    pub event: Option<&'a [u8]>,
    /// The `data:` lines joined with `\n`.
    pub data: &'a [u8],
}

/// The stream could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    /// A line or an event's data grew past the limit.
    TooLong {
        /// The limit in bytes.
        limit: usize,
    },
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::TooLong { limit } => {
                write!(f, "an SSE line or event exceeds {limit} bytes")
            }
        }
    }
}

impl std::error::Error for SseError {}

/// A field value: a range of the current input, or bytes of its own.
#[derive(Debug, Clone)]
enum Val {
    Input(usize, usize),
    Owned(Bytes),
}

#[derive(Debug, Default)]
enum DataBuf {
    #[default]
    None,
    One(Val),
    Many(BytesMut),
}

/// Where a complete line is.
#[derive(Debug, Clone, Copy)]
enum Line {
    /// `input[start..end]`.
    Input(usize, usize),
    /// All of `partial` (it was assembled across inputs).
    Partial,
}

/// What a line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Blank,
    Data,
    Event,
    /// Comments, `id`, `retry` and unknown fields do not matter to a benchmark.
    Ignored,
}

/// A line's kind and the offset of its value.
fn classify(line: &[u8]) -> (Kind, usize) {
    // Nearly every line of a token stream.
    if let Some(rest) = line.strip_prefix(b"data:") {
        let skip = if rest.first() == Some(&b' ') { 6 } else { 5 };
        return (Kind::Data, skip);
    }
    if line.is_empty() {
        return (Kind::Blank, 0);
    }
    if line.first() == Some(&b':') {
        return (Kind::Ignored, 0);
    }
    let (field, value) = match memchr::memchr(b':', line) {
        Some(c) => {
            let skip = if line.get(c + 1) == Some(&b' ') { 2 } else { 1 };
            (line.get(..c).unwrap_or(b""), (c + skip).min(line.len()))
        }
        None => (line, line.len()),
    };
    let kind = match field {
        b"data" => Kind::Data,
        b"event" => Kind::Event,
        _ => Kind::Ignored,
    };
    (kind, value)
}

/// The incremental parser. Call [`SseParser::feed`] with each body chunk, then
/// [`SseParser::next_event`] (or [`SseParser::next_event_ref`]) until it returns `Ok(None)`; at
/// the end of the body call [`SseParser::finish`].
#[derive(Debug)]
pub struct SseParser {
    /// The current input; `input[pos..]` is not scanned yet.
    input: Bytes,
    pos: usize,
    /// An incomplete line carried over from earlier input.
    partial: BytesMut,
    /// The previous line ended with `\r` at the very end of the input: a `\n` that starts the
    /// next input belongs to that line end.
    skip_lf: bool,
    data: DataBuf,
    event: Option<Val>,
    /// The event last dispatched, readable until the next call.
    out_data: DataBuf,
    out_event: Option<Val>,
    max: usize,
    /// Bytes examined for a line end and bytes copied, for the tests that bound the work.
    #[cfg(test)]
    work: Work,
}

/// Work done by a parser (tests only): each input byte should be examined and copied at most
/// a bounded number of times, however the input is cut.
#[cfg(test)]
#[derive(Debug, Default, Clone, Copy)]
struct Work {
    scanned: usize,
    copied: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser with the default size limit.
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A parser whose lines and events may not exceed `max` bytes.
    pub fn with_limit(max: usize) -> Self {
        Self {
            input: Bytes::new(),
            pos: 0,
            partial: BytesMut::new(),
            skip_lf: false,
            data: DataBuf::None,
            event: None,
            out_data: DataBuf::None,
            out_event: None,
            max,
            #[cfg(test)]
            work: Work::default(),
        }
    }

    /// Adds a chunk of the body.
    pub fn feed(&mut self, chunk: Bytes) {
        self.out_data = DataBuf::None;
        self.out_event = None;
        // Fields of the event being read that point into the input outlive it.
        if let DataBuf::One(v) = &mut self.data {
            own(&self.input, v);
        }
        if let Some(v) = &mut self.event {
            own(&self.input, v);
        }
        let rest = self.input.get(self.pos..).unwrap_or(b"");
        if rest.is_empty() {
            self.input = chunk;
        } else {
            // The caller did not drain the previous chunk; keep order by joining them.
            #[cfg(test)]
            {
                self.work.copied += rest.len() + chunk.len();
            }
            let mut joined = BytesMut::with_capacity(rest.len() + chunk.len());
            joined.extend_from_slice(rest);
            joined.extend_from_slice(&chunk);
            self.input = joined.freeze();
        }
        self.pos = 0;
    }

    /// The next complete event, `Ok(None)` when more input is needed.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        Ok(self.advance()?.then(|| self.take_out()))
    }

    /// [`SseParser::next_event`] without giving the event's bytes away: they are lent until
    /// the next call, which saves the reference counting of [`Bytes`] on the hot path.
    pub fn next_event_ref(&mut self) -> Result<Option<SseEventRef<'_>>, SseError> {
        if !self.advance()? {
            return Ok(None);
        }
        let data = match &self.out_data {
            DataBuf::None => b"",
            DataBuf::One(v) => val_bytes(&self.input, v),
            DataBuf::Many(m) => &m[..],
        };
        let event = self.out_event.as_ref().map(|v| val_bytes(&self.input, v));
        Ok(Some(SseEventRef { event, data }))
    }

    /// Ends the stream: a last line without a line end is processed, and an event whose blank
    /// terminating line never came is dispatched (servers that close right after the last
    /// `data:` line still have their last event read).
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        if let Some(ev) = self.next_event()? {
            return Ok(Some(ev));
        }
        if !self.partial.is_empty() && self.process_line(Line::Partial)? {
            return Ok(Some(self.take_out()));
        }
        Ok(self.dispatch().then(|| self.take_out()))
    }

    /// Reads lines up to the next dispatched event (`true`, in `out_*`).
    fn advance(&mut self) -> Result<bool, SseError> {
        self.out_data = DataBuf::None;
        self.out_event = None;
        if self.whole_data_event() {
            return Ok(true);
        }
        loop {
            let Some(line) = self.next_line()? else {
                return Ok(false);
            };
            if self.process_line(line)? {
                return Ok(true);
            }
        }
    }

    /// Nearly every event of a token stream, in one scan: a `data:` line ended by `\n` and
    /// the blank `\n` line after it, both in the input, with nothing carried over (no partial
    /// line, no `data:` or `event:` line of the event so far). Dispatches it into `out_*`
    /// exactly as the line-by-line path would; `false` (nothing consumed) for anything else.
    #[inline]
    fn whole_data_event(&mut self) -> bool {
        if self.skip_lf
            || !self.partial.is_empty()
            || !matches!(self.data, DataBuf::None)
            || self.event.is_some()
        {
            return false;
        }
        let start = self.pos;
        let rest = self.input.get(start..).unwrap_or(b"");
        if !rest.starts_with(b"data:") {
            return false;
        }
        let Some(i) = memchr::memchr2(b'\n', b'\r', rest) else {
            return false;
        };
        if rest.get(i) != Some(&b'\n') || rest.get(i + 1) != Some(&b'\n') {
            return false;
        }
        #[cfg(test)]
        {
            self.work.scanned += i + 2;
        }
        let skip = if rest.get(5) == Some(&b' ') { 6 } else { 5 };
        let end = start + i;
        self.out_data = DataBuf::One(Val::Input((start + skip).min(end), end));
        self.pos = end + 2;
        true
    }

    /// The dispatched event, owned.
    fn take_out(&mut self) -> SseEvent {
        let event = self.out_event.take().map(|v| val_owned(&self.input, v));
        let data = match std::mem::take(&mut self.out_data) {
            DataBuf::None => Bytes::new(),
            DataBuf::One(v) => val_owned(&self.input, v),
            DataBuf::Many(m) => m.freeze(),
        };
        SseEvent { event, data }
    }

    fn next_line(&mut self) -> Result<Option<Line>, SseError> {
        let len = self.input.len();
        if self.pos >= len {
            return Ok(None);
        }
        if self.skip_lf {
            self.skip_lf = false;
            if self.input.get(self.pos) == Some(&b'\n') {
                self.pos += 1;
                if self.pos >= len {
                    return Ok(None);
                }
            }
        }
        let start = self.pos;
        let rest = self.input.get(start..).unwrap_or(b"");
        let found = memchr::memchr2(b'\n', b'\r', rest);
        #[cfg(test)]
        {
            self.work.scanned += found.map_or(rest.len(), |i| i + 1);
        }
        let Some(i) = found else {
            if self.partial.len() + rest.len() > self.max {
                return Err(SseError::TooLong { limit: self.max });
            }
            #[cfg(test)]
            {
                self.work.copied += rest.len();
            }
            self.partial.extend_from_slice(rest);
            self.pos = len;
            return Ok(None);
        };
        let end = start + i;
        let terminator = match rest.get(i) {
            Some(b'\r') => {
                if end + 1 == len {
                    self.skip_lf = true;
                    1
                } else if rest.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                }
            }
            _ => 1,
        };
        self.pos = (end + terminator).min(len);
        if self.partial.is_empty() {
            Ok(Some(Line::Input(start, end)))
        } else {
            let head = rest.get(..i).unwrap_or(b"");
            if self.partial.len() + head.len() > self.max {
                return Err(SseError::TooLong { limit: self.max });
            }
            #[cfg(test)]
            {
                self.work.copied += head.len();
            }
            self.partial.extend_from_slice(head);
            Ok(Some(Line::Partial))
        }
    }

    /// Takes one line in; `true` when it dispatched an event into `out_*`.
    fn process_line(&mut self, line: Line) -> Result<bool, SseError> {
        let (kind, value) = match line {
            Line::Input(start, end) => {
                let (kind, off) = classify(self.input.get(start..end).unwrap_or(b""));
                (kind, Val::Input((start + off).min(end), end))
            }
            Line::Partial => {
                let bytes = self.partial.split().freeze();
                let (kind, off) = classify(&bytes);
                (kind, Val::Owned(bytes.slice(off.min(bytes.len())..)))
            }
        };
        match kind {
            Kind::Blank => return Ok(self.dispatch()),
            Kind::Data => self.push_data(value)?,
            Kind::Event => self.event = Some(value),
            Kind::Ignored => {}
        }
        Ok(false)
    }

    fn push_data(&mut self, value: Val) -> Result<(), SseError> {
        self.data = match std::mem::take(&mut self.data) {
            DataBuf::None => DataBuf::One(value),
            DataBuf::One(first) => {
                let first = val_bytes(&self.input, &first);
                let value = val_bytes(&self.input, &value);
                let mut m = BytesMut::with_capacity(first.len() + 1 + value.len());
                m.extend_from_slice(first);
                m.extend_from_slice(b"\n");
                m.extend_from_slice(value);
                DataBuf::Many(m)
            }
            DataBuf::Many(mut m) => {
                m.extend_from_slice(b"\n");
                m.extend_from_slice(val_bytes(&self.input, &value));
                DataBuf::Many(m)
            }
        };
        if let DataBuf::Many(m) = &self.data {
            if m.len() > self.max {
                self.data = DataBuf::None;
                return Err(SseError::TooLong { limit: self.max });
            }
        }
        Ok(())
    }

    /// Ends the current event: `true` (and the event in `out_*`) if it had data.
    fn dispatch(&mut self) -> bool {
        let event = self.event.take();
        match std::mem::take(&mut self.data) {
            DataBuf::None => false,
            data => {
                self.out_data = data;
                self.out_event = event;
                true
            }
        }
    }
}

/// The bytes of `v`, whose ranges are always within `input` (an empty slice otherwise).
fn val_bytes<'a>(input: &'a Bytes, v: &'a Val) -> &'a [u8] {
    match v {
        Val::Input(a, b) => input.get(*a..*b).unwrap_or(b""),
        Val::Owned(bytes) => bytes,
    }
}

fn val_owned(input: &Bytes, v: Val) -> Bytes {
    match v {
        Val::Input(a, b) if a <= b && b <= input.len() => input.slice(a..b),
        Val::Input(..) => Bytes::new(),
        Val::Owned(bytes) => bytes,
    }
}

/// Makes `v` independent of `input`.
fn own(input: &Bytes, v: &mut Val) {
    if let Val::Input(..) = v {
        let owned = val_owned(input, std::mem::replace(v, Val::Owned(Bytes::new())));
        *v = Val::Owned(owned);
    }
}

#[cfg(test)]
pub(crate) mod tests_data {
    /// A vLLM chat stream (role-only first chunk, usage chunk, `[DONE]`).
    pub(crate) const VLLM_CHAT: &[u8] = b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w\\u00f6rld\"},\"finish_reason\":\"length\"}]}\n\n\
data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"total_tokens\":7,\"completion_tokens\":2}}\n\n\
data: [DONE]\n\n";
}

#[cfg(test)]
mod tests {
    use super::tests_data::VLLM_CHAT;
    use super::*;
    use proptest::prelude::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(Bytes::copy_from_slice(c));
            while let Some(ev) = p.next_event().expect("parse") {
                out.push(ev);
            }
        }
        while let Some(ev) = p.finish().expect("finish") {
            out.push(ev);
        }
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(|e| Bytes::copy_from_slice(e.as_bytes())),
            data: Bytes::copy_from_slice(data.as_bytes()),
        }
    }

    /// Every syntax feature at once: CRLF, lone CR, comments, event lines, multi-line data,
    /// unknown fields, a field without a colon, and no space after the colon.
    const MIXED: &[u8] = b": keep-alive\r\n\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\n\
data:first\ndata: second\n\nid: 7\nretry: 10\ndata\n\n\
data: cr only\r\rdata: [DONE]\n\n: trailing comment\n";

    /// A TGI `/generate_stream` stream.
    const TGI: &[u8] = b"data:{\"index\":1,\"token\":{\"id\":22172,\"text\":\" Hello\",\"logprob\":-0.1,\"special\":false},\"generated_text\":null,\"details\":null}\n\n\
data:{\"index\":2,\"token\":{\"id\":2,\"text\":\"</s>\",\"logprob\":-0.2,\"special\":true},\"generated_text\":\" Hello\",\"details\":{\"finish_reason\":\"eos_token\",\"generated_tokens\":2,\"seed\":null}}\n\n";

    #[test]
    fn parses_mixed_syntax() {
        let got = parse_chunks(&[MIXED]);
        assert_eq!(
            got,
            vec![
                ev(Some("message"), "{\"a\":1}"),
                ev(None, "first\nsecond"),
                ev(None, ""),
                ev(None, "cr only"),
                ev(None, "[DONE]"),
            ]
        );
    }

    #[test]
    fn single_line_events_are_zero_copy() {
        let input = Bytes::from_static(VLLM_CHAT);
        let range = input.as_ptr() as usize..input.as_ptr() as usize + input.len();
        let mut p = SseParser::new();
        p.feed(input.clone());
        let mut n = 0;
        while let Some(ev) = p.next_event().expect("parse") {
            assert!(
                range.contains(&(ev.data.as_ptr() as usize)),
                "data was copied"
            );
            n += 1;
        }
        assert_eq!(n, 5);
    }

    #[test]
    fn finish_dispatches_an_unterminated_last_event() {
        assert_eq!(parse_chunks(&[b"data: x\n"]), vec![ev(None, "x")]);
        assert_eq!(parse_chunks(&[b"data: x"]), vec![ev(None, "x")]);
        assert_eq!(parse_chunks(&[b": only a comment"]), vec![]);
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_end() {
        assert_eq!(
            parse_chunks(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]),
            vec![ev(None, "a"), ev(None, "b")]
        );
    }

    #[test]
    fn too_long_line_is_an_error_not_an_allocation_bomb() {
        let mut p = SseParser::with_limit(16);
        p.feed(Bytes::from_static(b"data: 0123456789"));
        assert_eq!(p.next_event(), Ok(None));
        p.feed(Bytes::from_static(b"0123456789"));
        assert_eq!(p.next_event(), Err(SseError::TooLong { limit: 16 }));
    }

    /// A 10 MiB line cut into 16 KiB chunks (as a socket delivers it): every byte is examined
    /// for a line end once and copied once into the line being assembled. Rescanning or
    /// re-joining the assembled part at each chunk would be quadratic: ~3,000 times more work
    /// here. Counts work, not time, so it holds on any machine.
    #[test]
    fn a_huge_line_in_small_chunks_is_linear_work() {
        let len = 10 << 20;
        let mut p = SseParser::new();
        p.feed(Bytes::from_static(b"data: {\"choices\":[{\"text\":\""));
        assert_eq!(p.next_event(), Ok(None));
        let chunk = Bytes::from(vec![b'x'; 16 << 10]);
        for _ in 0..len / chunk.len() {
            p.feed(chunk.clone());
            assert_eq!(p.next_event(), Ok(None));
        }
        p.feed(Bytes::from_static(b"\"}]}\n\n"));
        let ev = p.next_event().expect("parses").expect("one event");
        assert_eq!(ev.data.len(), len + 25);
        let input = len + 64;
        assert!(p.work.scanned <= input, "{:?} for {input} bytes", p.work);
        assert!(p.work.copied <= input, "{:?} for {input} bytes", p.work);
    }

    /// The same bound for every way of cutting a stream of many lines.
    #[test]
    fn work_is_linear_for_any_chunking() {
        let stream: Vec<u8> = VLLM_CHAT.repeat(50);
        for size in [1, 2, 7, 64, 4096] {
            let mut p = SseParser::new();
            let mut n = 0;
            for c in stream.chunks(size) {
                p.feed(Bytes::copy_from_slice(c));
                while p.next_event().expect("parses").is_some() {
                    n += 1;
                }
            }
            assert_eq!(n, 250);
            assert!(
                p.work.scanned <= stream.len(),
                "{:?}, chunks of {size}",
                p.work
            );
            assert!(
                p.work.copied <= stream.len(),
                "{:?}, chunks of {size}",
                p.work
            );
        }
    }

    #[test]
    fn every_single_split_point_gives_the_same_events() {
        for stream in [VLLM_CHAT, MIXED, TGI] {
            let whole = parse_chunks(&[stream]);
            assert!(!whole.is_empty());
            for i in 0..=stream.len() {
                let (a, b) = stream.split_at(i);
                assert_eq!(parse_chunks(&[a, b]), whole, "split at {i}");
            }
        }
    }

    proptest! {
        /// Recorded streams cut at arbitrary sets of boundaries (up to one byte per chunk)
        /// parse to the same events as in one piece.
        #[test]
        fn any_chunking_gives_the_same_events(
            which in 0usize..3,
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..64),
        ) {
            let stream = [VLLM_CHAT, MIXED, TGI][which];
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
            points.sort_unstable();
            points.dedup();
            let mut chunks = Vec::new();
            let mut last = 0;
            for p in points {
                chunks.push(&stream[last..p]);
                last = p;
            }
            chunks.push(&stream[last..]);
            prop_assert_eq!(parse_chunks(&chunks), parse_chunks(&[stream]));
        }

        /// Arbitrary bytes, arbitrarily chunked: never a panic, and the same events as the
        /// unchunked input.
        #[test]
        fn malformed_input_never_panics(
            bytes in proptest::collection::vec(
                prop_oneof![
                    4 => any::<u8>(),
                    1 => Just(b'\n'),
                    1 => Just(b'\r'),
                    1 => Just(b':'),
                ],
                0..512,
            ),
            cut in any::<prop::sample::Index>(),
        ) {
            let at = cut.index(bytes.len() + 1);
            let (a, b) = bytes.split_at(at);
            prop_assert_eq!(parse_chunks(&[a, b]), parse_chunks(&[&bytes]));
        }
    }
}
