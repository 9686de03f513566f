//! The SSE parser as it was before events were lent in place (commit 31c4231), kept verbatim
//! (renamed `RefParser`) as the oracle the current parser is checked against.

#![allow(dead_code)]

use bench_worker::sse::{SseError, SseEvent, DEFAULT_MAX_EVENT_BYTES};
use bytes::{Bytes, BytesMut};

#[derive(Debug, Default)]
enum DataBuf {
    #[default]
    None,
    One(Bytes),
    Many(BytesMut),
}

/// The incremental parser. Call [`RefParser::feed`] with each body chunk, then
/// [`RefParser::next_event`] until it returns `Ok(None)`; at the end of the body call
/// [`RefParser::finish`].
#[derive(Debug)]
pub struct RefParser {
    /// Unscanned remainder of the current input.
    input: Bytes,
    /// An incomplete line carried over from earlier input.
    partial: BytesMut,
    /// The previous line ended with `\r` at the very end of the input: a `\n` that starts the
    /// next input belongs to that line end.
    skip_lf: bool,
    data: DataBuf,
    event: Option<Bytes>,
    max: usize,
}

impl Default for RefParser {
    fn default() -> Self {
        Self::new()
    }
}

impl RefParser {
    /// A parser with the default size limit.
    pub fn new() -> Self {
        Self::with_limit(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A parser whose lines and events may not exceed `max` bytes.
    pub fn with_limit(max: usize) -> Self {
        Self {
            input: Bytes::new(),
            partial: BytesMut::new(),
            skip_lf: false,
            data: DataBuf::None,
            event: None,
            max,
        }
    }

    /// Adds a chunk of the body.
    pub fn feed(&mut self, chunk: Bytes) {
        if self.input.is_empty() {
            self.input = chunk;
        } else {
            // The caller did not drain the previous chunk; keep order by joining them.
            let mut joined = BytesMut::with_capacity(self.input.len() + chunk.len());
            joined.extend_from_slice(&self.input);
            joined.extend_from_slice(&chunk);
            self.input = joined.freeze();
        }
    }

    /// The next complete event, `Ok(None)` when more input is needed.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        loop {
            let Some(line) = self.next_line()? else {
                return Ok(None);
            };
            if let Some(ev) = self.process_line(line)? {
                return Ok(Some(ev));
            }
        }
    }

    /// Ends the stream: a last line without a line end is processed, and an event whose blank
    /// terminating line never came is dispatched (servers that close right after the last
    /// `data:` line still have their last event read).
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        if let Some(ev) = self.next_event()? {
            return Ok(Some(ev));
        }
        if !self.partial.is_empty() {
            let line = self.partial.split().freeze();
            if let Some(ev) = self.process_line(line)? {
                return Ok(Some(ev));
            }
        }
        Ok(self.dispatch())
    }

    fn next_line(&mut self) -> Result<Option<Bytes>, SseError> {
        if self.input.is_empty() {
            return Ok(None);
        }
        if self.skip_lf {
            self.skip_lf = false;
            if self.input.first() == Some(&b'\n') {
                let _ = self.input.split_to(1);
                if self.input.is_empty() {
                    return Ok(None);
                }
            }
        }
        let Some(i) = memchr::memchr2(b'\n', b'\r', &self.input) else {
            if self.partial.len() + self.input.len() > self.max {
                return Err(SseError::TooLong { limit: self.max });
            }
            self.partial.extend_from_slice(&self.input);
            self.input = Bytes::new();
            return Ok(None);
        };
        let len = self.input.len();
        let terminator = match self.input.get(i) {
            Some(b'\r') => {
                if i + 1 == len {
                    self.skip_lf = true;
                    1
                } else if self.input.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                }
            }
            _ => 1,
        };
        let mut rest = self.input.split_off(i);
        let _ = rest.split_to(terminator.min(rest.len()));
        let head = std::mem::replace(&mut self.input, rest);
        if self.partial.is_empty() {
            Ok(Some(head))
        } else {
            if self.partial.len() + head.len() > self.max {
                return Err(SseError::TooLong { limit: self.max });
            }
            self.partial.extend_from_slice(&head);
            Ok(Some(self.partial.split().freeze()))
        }
    }

    fn process_line(&mut self, line: Bytes) -> Result<Option<SseEvent>, SseError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.first() == Some(&b':') {
            return Ok(None);
        }
        let (field, value) = match memchr::memchr(b':', &line) {
            Some(c) => {
                let skip = if line.get(c + 1) == Some(&b' ') { 2 } else { 1 };
                (&line[..c], line.slice((c + skip).min(line.len())..))
            }
            None => (&line[..], Bytes::new()),
        };
        match field {
            b"data" => self.push_data(value)?,
            b"event" => self.event = Some(value),
            _ => {} // id, retry and unknown fields do not matter to a benchmark
        }
        Ok(None)
    }

    fn push_data(&mut self, value: Bytes) -> Result<(), SseError> {
        self.data = match std::mem::take(&mut self.data) {
            DataBuf::None => DataBuf::One(value),
            DataBuf::One(first) => {
                let mut m = BytesMut::with_capacity(first.len() + 1 + value.len());
                m.extend_from_slice(&first);
                m.extend_from_slice(b"\n");
                m.extend_from_slice(&value);
                DataBuf::Many(m)
            }
            DataBuf::Many(mut m) => {
                m.extend_from_slice(b"\n");
                m.extend_from_slice(&value);
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

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        match std::mem::take(&mut self.data) {
            DataBuf::None => None,
            DataBuf::One(data) => Some(SseEvent { event, data }),
            DataBuf::Many(m) => Some(SseEvent {
                event,
                data: m.freeze(),
            }),
        }
    }
}
