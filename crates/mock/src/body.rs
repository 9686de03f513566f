//! The response body: a whole buffer, or a pre-rendered stream written frame by frame as the
//! engine releases tokens, with the injected stops (reset, stall) and the ground-truth record.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use crate::engine::SeqHandle;
use crate::log::{EndKind, RequestLog, RequestLogEntry};
use crate::metrics::Metrics;
use crate::render::{Pieces, Rendered, Stop};
use crate::replicas::Lease;

/// Per-connection state the bodies can touch.
#[derive(Debug, Default)]
pub(crate) struct ConnShared {
    /// Set by a body that injects a reset on an HTTP/1.1 connection: the connection's socket is
    /// closed with `SO_LINGER` 0 (a TCP RST) when hyper drops it.
    pub reset: AtomicBool,
}

/// The error a body returns to make hyper abort the connection (HTTP/1.1) or reset the stream
/// (HTTP/2).
#[derive(Debug, thiserror::Error)]
#[error("simulated fault: connection reset")]
pub(crate) struct InjectedReset;

/// The ground-truth record being built for one response.
#[derive(Debug)]
pub(crate) struct LogState {
    pub entry: RequestLogEntry,
    pub sink: Arc<RequestLog>,
}

/// A request's log entry while its handler runs, before a response body owns it: when the
/// handler is dropped first (the client left during a slow-headers delay, the upload or the
/// wait of a non-streaming answer), the entry is still written, with `end: client_gone` and
/// `status: 0` (no response was sent), so the log holds every request that arrived.
pub(crate) struct PendingLog(pub Option<Box<LogState>>);

impl PendingLog {
    /// Hands the entry over to whatever writes it from now on.
    pub fn take(&mut self) -> Option<Box<LogState>> {
        self.0.take()
    }

    /// Stamps the entry's `submitted_unix_ns`: the engine receives the request now.
    pub fn submitted(&mut self) {
        if let Some(l) = &mut self.0 {
            l.entry.submitted_unix_ns = Some(l.sink.timebase.unix_ns(Instant::now()));
        }
    }
}

impl Drop for PendingLog {
    fn drop(&mut self) {
        if let Some(log) = self.0.take() {
            let LogState { mut entry, sink } = *log;
            entry.end = EndKind::ClientGone;
            entry.status = 0;
            sink.push(entry);
        }
    }
}

impl LogState {
    fn tokens_written(&mut self, tokens: u32) {
        if tokens == 0 {
            return;
        }
        let now = Instant::now();
        let ns = self.sink.timebase.unix_ns(now);
        if self.entry.first_token.is_none() {
            self.entry.first_token = Some(now);
            self.entry.first_token_unix_ns = Some(ns);
        }
        self.entry.last_token = Some(now);
        self.entry.last_token_unix_ns = Some(ns);
        self.entry.output_tokens += tokens;
        if self.sink.token_times {
            self.entry
                .token_unix_ns
                .extend(std::iter::repeat_n(ns, tokens as usize));
        }
    }
}

/// A response body.
#[derive(Debug)]
pub(crate) struct MockBody {
    inner: Inner,
    log: Option<Box<LogState>>,
    end: EndKind,
    /// Zero-delay mode counts in-flight streams as running.
    running: Option<Arc<Metrics>>,
    /// The request's hold on its replica, released when the response ends.
    lease: Option<Lease>,
}

#[derive(Debug)]
enum Inner {
    Done,
    /// A whole body carrying `tokens` tokens.
    Full(Bytes, u32),
    Stream(Box<StreamState>),
}

#[derive(Debug)]
struct StreamState {
    r: Rendered,
    next: u32,
    gate: Option<SeqHandle>,
    stall: Option<Pin<Box<tokio::time::Sleep>>>,
    stall_for: Option<Duration>,
    conn: Arc<ConnShared>,
    http1: bool,
    tokens: u32,
    reset_armed: bool,
}

/// What a planned stop (reset or stall) does at the frame about to be written.
enum AtStop {
    /// Waiting: for the token after the stop, the flush before a reset, or the stall.
    Pending,
    /// The stream is reset now.
    Reset,
    /// A bounded stall is over: the stream goes on.
    Resumed,
    /// No stop before this frame.
    NotHere,
}

impl StreamState {
    /// A stop planned before frame `next` strikes once the token after it is released.
    fn poll_stop(&mut self, cx: &mut Context<'_>, end: &mut EndKind) -> AtStop {
        let Some((k, stop)) = self.r.stop else {
            return AtStop::NotHere;
        };
        if k != self.next {
            return AtStop::NotHere;
        }
        if let Some(g) = &self.gate {
            if g.poll_released(cx, (k + 1).min(self.tokens)).is_pending() {
                return AtStop::Pending;
            }
        }
        match stop {
            Stop::Reset => {
                if !self.reset_armed {
                    // Yield once so hyper flushes what was written before; the reset must
                    // not swallow it.
                    self.reset_armed = true;
                    cx.waker().wake_by_ref();
                    return AtStop::Pending;
                }
                if self.http1 {
                    self.conn.reset.store(true, Ordering::Release);
                }
                *end = EndKind::Reset;
                AtStop::Reset
            }
            Stop::Stall => {
                *end = EndKind::Stalled;
                let Some(d) = self.stall_for else {
                    // Until the client leaves: nothing will wake us.
                    return AtStop::Pending;
                };
                let sleep = self
                    .stall
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(d)));
                if sleep.as_mut().poll(cx).is_pending() {
                    return AtStop::Pending;
                }
                self.stall = None;
                self.r.stop = None;
                *end = EndKind::ClientGone;
                AtStop::Resumed
            }
        }
    }

    /// The frame the write may go up to: frame `j` may go once `min(j + 1, tokens)` tokens
    /// are released, and never past a planned stop.
    fn poll_upto(&self, cx: &mut Context<'_>, frames: u32) -> Poll<u32> {
        let mut upto = frames;
        if let Some(g) = &self.gate {
            match g.poll_released(cx, (self.next + 1).min(self.tokens)) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(r) => {
                    upto = if r >= self.tokens {
                        frames
                    } else {
                        r.min(frames)
                    }
                }
            }
        }
        if let Some((k, _)) = self.r.stop {
            upto = upto.min(k);
        }
        Poll::Ready(upto)
    }

    /// The bytes of frames `next..upto` and the output tokens they carry; advances `next`.
    fn take_frames(&mut self, upto: u32) -> (Pieces, u32) {
        let r = &mut self.r;
        let start = if self.next == 0 {
            0
        } else {
            r.ends.get(self.next as usize - 1).copied().unwrap_or(0) as usize
        };
        let end = if r.ends.is_empty() {
            r.data.len()
        } else {
            r.ends
                .get(upto as usize - 1)
                .copied()
                .unwrap_or(r.data.len() as u32) as usize
        };
        let tokens = if r.ends.is_empty() {
            // One frame holding the whole body: every token goes with it.
            r.token_frames
        } else {
            upto.min(r.token_frames).saturating_sub(self.next)
        };
        self.next = upto;
        let mut chunk = if start == 0 && end == r.data.len() {
            // The whole body in one frame (zero-delay mode): hand it over as is, without the
            // shared-buffer allocation a slice of it costs.
            std::mem::take(&mut r.data)
        } else {
            r.data.slice(start..end)
        };
        // The usage event of a stream with a prefix cache: its cached tokens, known since
        // admission.
        if let (Some(slot), Some(g)) = (r.cached_slot, &self.gate) {
            if (start..end).contains(&slot) {
                chunk = chunk.fill_cached(slot - start, g.cached_tokens());
            }
        }
        (chunk, tokens)
    }

    /// How a stream that wrote all its frames ended.
    fn end_kind(&self, frames: u32) -> EndKind {
        if s_error_event(frames, self.r.token_frames) {
            EndKind::StreamError
        } else {
            EndKind::Completed
        }
    }
}

impl MockBody {
    /// An empty body.
    pub(crate) fn empty() -> Self {
        Self::full(Bytes::new(), 0, None)
    }

    /// A whole body that carries `tokens` output tokens.
    pub(crate) fn full(data: Bytes, tokens: u32, log: Option<Box<LogState>>) -> Self {
        let inner = if data.is_empty() && tokens == 0 {
            Inner::Done
        } else {
            Inner::Full(data, tokens)
        };
        let end = if matches!(inner, Inner::Done) {
            EndKind::Completed
        } else {
            EndKind::ClientGone
        };
        Self {
            inner,
            log,
            end,
            running: None,
            lease: None,
        }
    }

    /// A streamed body of `tokens` output tokens. `gate` paces it (none: write at once).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn stream(
        r: Rendered,
        tokens: u32,
        gate: Option<SeqHandle>,
        stall_for: Option<Duration>,
        conn: Arc<ConnShared>,
        http1: bool,
        log: Option<Box<LogState>>,
        running: Option<Arc<Metrics>>,
    ) -> Self {
        if let Some(m) = &running {
            m.running_add(1);
        }
        Self {
            inner: Inner::Stream(Box::new(StreamState {
                r,
                next: 0,
                gate,
                stall: None,
                stall_for,
                conn,
                http1,
                tokens,
                reset_armed: false,
            })),
            log,
            end: EndKind::ClientGone,
            running,
            lease: None,
        }
    }

    /// The body holds `lease` until it is dropped: the request stays outstanding on its
    /// replica until its response ends.
    pub(crate) fn leased(mut self, lease: Lease) -> Self {
        self.lease = Some(lease);
        self
    }
}

impl Body for MockBody {
    type Data = Pieces;
    type Error = InjectedReset;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Pieces>, InjectedReset>>> {
        let this = self.get_mut();
        match &mut this.inner {
            Inner::Done => Poll::Ready(None),
            Inner::Full(..) => {
                let Inner::Full(data, tokens) = std::mem::replace(&mut this.inner, Inner::Done)
                else {
                    return Poll::Ready(None);
                };
                if let Some(log) = &mut this.log {
                    log.tokens_written(tokens);
                }
                this.end = EndKind::Completed;
                Poll::Ready(Some(Ok(Frame::data(Pieces::from(data)))))
            }
            Inner::Stream(s) => {
                let frames = s.r.frames();
                loop {
                    match s.poll_stop(cx, &mut this.end) {
                        AtStop::Pending => return Poll::Pending,
                        AtStop::Reset => {
                            this.inner = Inner::Done;
                            return Poll::Ready(Some(Err(InjectedReset)));
                        }
                        AtStop::Resumed => continue,
                        AtStop::NotHere => {}
                    }
                    if s.next >= frames {
                        this.end = s.end_kind(frames);
                        this.inner = Inner::Done;
                        return Poll::Ready(None);
                    }
                    let upto = match s.poll_upto(cx, frames) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(u) => u,
                    };
                    let (chunk, tokens) = s.take_frames(upto);
                    if let Some(log) = &mut this.log {
                        log.tokens_written(tokens);
                        if let Some(g) = &s.gate {
                            log.entry.cached_tokens = g.cached_tokens();
                        }
                    }
                    if s.next >= frames && s.r.stop.is_none_or(|(k, _)| k > frames) {
                        // Written everything: release the engine slot now if still held, and
                        // end the body with this frame, so hyper writes the end of the
                        // message together with it.
                        this.end = s.end_kind(frames);
                        this.inner = Inner::Done;
                    }
                    return Poll::Ready(Some(Ok(Frame::data(chunk))));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.inner, Inner::Done)
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Done => SizeHint::with_exact(0),
            Inner::Full(b, _) => SizeHint::with_exact(b.len() as u64),
            Inner::Stream(_) => SizeHint::default(),
        }
    }
}

/// An error frame follows the token frames.
fn s_error_event(frames: u32, token_frames: u32) -> bool {
    frames > token_frames
}

impl Drop for MockBody {
    fn drop(&mut self) {
        if let Some(m) = &self.running {
            m.running_add(-1);
        }
        if let Some(mut log) = self.log.take() {
            log.entry.end = self.end;
            let LogState { entry, sink } = *log;
            sink.push(entry);
        }
    }
}
