//! Ground truth: one record per generation request, written as a JSON line to the file given in
//! `log_requests` and/or kept in memory (`record_requests`).
//!
//! Times are Unix-epoch nanoseconds taken from one monotonic clock anchored to the wall clock
//! at server start, so they are ordered and comparable with each other exactly, and with a
//! client's wall clock on the same machine up to clock slew. In-process records also carry the
//! `std::time::Instant`s, for exact comparison with a client in the same process.

use std::io::Write as _;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::faults::FaultRecord;
use crate::Error;

/// How a response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndKind {
    /// The whole body was written.
    Completed,
    /// The client went away (or the server shut down) before the body was written.
    ClientGone,
    /// An injected reset ended it.
    Reset,
    /// An injected in-stream error event ended it.
    StreamError,
    /// An injected stall was in progress when it ended.
    Stalled,
}

/// What the simulator did for one generation request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestLogEntry {
    /// Arrival number, from 0.
    pub id: u64,
    /// The replica that served it (from 0; always 0 with one replica, or in zero-delay mode).
    /// Absent from logs written before replicas existed, hence read as 0.
    #[serde(default)]
    pub replica: u32,
    /// The request path, e.g. `/v1/completions`.
    pub endpoint: String,
    /// Whether the response was streamed.
    pub stream: bool,
    /// The response status.
    pub status: u16,
    /// Prompt tokens counted by the server's tokenizer (0 for rejected requests).
    pub prompt_tokens: u32,
    /// Output tokens the request was to get.
    pub planned_tokens: u32,
    /// Of those, the first this many are reasoning (`reasoning_tokens` of the config, chat
    /// only).
    #[serde(default)]
    pub reasoning_tokens: u32,
    /// Output tokens actually written to the client.
    pub output_tokens: u32,
    /// Request headers received (Unix ns).
    pub arrival_unix_ns: u64,
    /// The engine received the request (Unix ns): after the server read, parsed and tokenized
    /// it and hashed its prefix blocks. From here to the first token is the engine model's TTFT
    /// (docs/simulator.md); from `arrival_unix_ns` to here is the server's own CPU work, which
    /// grows with the prompt and with a busy machine. `None` when the engine never saw it
    /// (rejected, faulted, or a simulator without delays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_unix_ns: Option<u64>,
    /// The first token handed to the connection (Unix ns).
    pub first_token_unix_ns: Option<u64>,
    /// The last token handed to the connection (Unix ns).
    pub last_token_unix_ns: Option<u64>,
    /// Prompt tokens served by the prefix cache (no prefill cost); 0 without a cache.
    #[serde(default)]
    pub cached_tokens: u32,
    /// Every token's write time (Unix ns), when `log_token_times` is set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub token_unix_ns: Vec<u64>,
    /// Injected faults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultRecord>,
    /// How the response ended.
    pub end: EndKind,
    /// Pooling requests: the inputs (embeddings inputs, rerank documents) the request carried;
    /// 0 for generation requests.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inputs: u32,
    /// Pooling requests: the reply was handed to the connection (Unix ns), after the request's
    /// closed-form service time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_unix_ns: Option<u64>,
    /// Chat requests with images: the images (`image_url` parts) in the prompt.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub images: u32,
    /// Their prompt tokens (part of `prompt_tokens`): `ceil(w / 28) * ceil(h / 28) + 2` each.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub image_tokens: u32,
    /// Speculative decoding (`spec_tokens` > 0): the decode steps the request was drawn to
    /// take, each one draft of `spec_tokens` tokens verified (a request that ends early runs
    /// fewer). Its streamed events are 1 + this many.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spec_drafts: u32,
    /// Of those drafts, the tokens drawn to be accepted (past the last token too, as vLLM
    /// counts them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spec_accepted_tokens: u32,
    /// Chat tools: the prompt tokens (part of `prompt_tokens`) of the tool definitions, the
    /// tool calls' `arguments` and the `role: tool` messages (docs/simulator.md, "Tool
    /// calls").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_tokens: u32,
    /// The answer was a tool call (`finish_reason: "tool_calls"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tool_call: bool,
    /// The value of its affinity header (`affinity_header`, `x-session-id` by default), when
    /// it carried one: the session it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The model it named, when the server serves several (`models`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// In-process only: arrival.
    #[serde(skip)]
    pub arrival: Option<Instant>,
    /// In-process only: first token written.
    #[serde(skip)]
    pub first_token: Option<Instant>,
    /// In-process only: last token written.
    #[serde(skip)]
    pub last_token: Option<Instant>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Maps instants to Unix nanoseconds through one anchor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timebase {
    instant: Instant,
    unix_ns: u64,
}

impl Timebase {
    pub(crate) fn now() -> Self {
        let instant = Instant::now();
        let unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Self { instant, unix_ns }
    }

    pub(crate) fn unix_ns(&self, t: Instant) -> u64 {
        self.unix_ns + t.saturating_duration_since(self.instant).as_nanos() as u64
    }
}

/// Where finished records go.
#[derive(Debug)]
pub(crate) struct RequestLog {
    file: Mutex<Option<mpsc::Sender<RequestLogEntry>>>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    memory: Option<Mutex<Vec<RequestLogEntry>>>,
    pub(crate) timebase: Timebase,
    pub(crate) token_times: bool,
}

impl RequestLog {
    /// `None` when neither a file nor in-memory records are asked for.
    pub(crate) fn open(
        path: Option<&Path>,
        memory: bool,
        token_times: bool,
    ) -> Result<Option<Arc<Self>>, Error> {
        if path.is_none() && !memory {
            return Ok(None);
        }
        let (tx, writer) = match path {
            Some(path) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|source| Error::RequestLog {
                        path: path.to_path_buf(),
                        source,
                    })?;
                let (tx, rx) = mpsc::channel::<RequestLogEntry>();
                let path = path.to_path_buf();
                // A plain thread: file writes never block the server's runtime.
                let handle = std::thread::Builder::new()
                    .name("mock-request-log".into())
                    .spawn(move || write_lines(file, &path, rx))
                    .map_err(|source| Error::RequestLog {
                        path: Default::default(),
                        source,
                    })?;
                (Some(tx), Some(handle))
            }
            None => (None, None),
        };
        Ok(Some(Arc::new(Self {
            file: Mutex::new(tx),
            writer: Mutex::new(writer),
            memory: memory.then(|| Mutex::new(Vec::new())),
            timebase: Timebase::now(),
            token_times,
        })))
    }

    pub(crate) fn push(&self, entry: RequestLogEntry) {
        if let Some(m) = &self.memory {
            if let Ok(mut v) = m.lock() {
                v.push(entry.clone());
            }
        }
        if let Ok(tx) = self.file.lock() {
            if let Some(tx) = tx.as_ref() {
                let _ = tx.send(entry);
            }
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<RequestLogEntry> {
        self.memory
            .as_ref()
            .and_then(|m| m.lock().ok().map(|v| v.clone()))
            .unwrap_or_default()
    }

    /// Closes the file after writing everything pushed so far.
    pub(crate) fn close(&self) -> Option<std::thread::JoinHandle<()>> {
        if let Ok(mut tx) = self.file.lock() {
            tx.take();
        }
        self.writer.lock().ok().and_then(|mut w| w.take())
    }
}

fn write_lines(file: std::fs::File, path: &Path, rx: mpsc::Receiver<RequestLogEntry>) {
    let mut out = std::io::BufWriter::new(file);
    let mut failed = false;
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        // Write whatever is queued, then flush, so readers see complete lines promptly.
        while let Some(entry) = next {
            if !failed {
                let r = serde_json::to_writer(&mut out, &entry)
                    .map_err(std::io::Error::from)
                    .and_then(|()| out.write_all(b"\n"));
                if let Err(e) = r {
                    tracing::error!(path = %path.display(), error = %e, "request log write failed");
                    failed = true;
                }
            }
            next = rx.try_recv().ok();
        }
        if !failed {
            if let Err(e) = out.flush() {
                tracing::error!(path = %path.display(), error = %e, "request log write failed");
                failed = true;
            }
        }
    }
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_without_a_replica_read_as_replica_0_and_new_lines_name_it() {
        let old = r#"{"id":3,"endpoint":"/v1/completions","stream":true,"status":200,
            "prompt_tokens":3,"planned_tokens":2,"output_tokens":2,"arrival_unix_ns":1,
            "first_token_unix_ns":2,"last_token_unix_ns":3,"end":"completed"}"#;
        let mut e: RequestLogEntry = serde_json::from_str(old).expect("an old line parses");
        assert_eq!((e.id, e.replica), (3, 0));
        e.replica = 2;
        let line = serde_json::to_string(&e).expect("serialize");
        assert!(line.starts_with(r#"{"id":3,"replica":2,"#), "{line}");
        let back: RequestLogEntry = serde_json::from_str(&line).expect("round trip");
        assert_eq!(back.replica, 2);
    }
}
