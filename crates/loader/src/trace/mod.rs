//! Traces: recorded traffic, one row per request with its arrival time, replayed at that time.
//!
//! Formats (docs/data.md, "Traces"): Mooncake and Bailian JSONL (`timestamp`, `input_length`,
//! `output_length`, `hash_ids`), the Azure LLM inference trace CSV (`TIMESTAMP`,
//! `ContextTokens`, `GeneratedTokens`), BurstGPT CSV (`Timestamp`, `Request tokens`,
//! `Response tokens`, `Model`, `Log Type`) and a plain JSONL of our own (`timestamp` with a
//! `prompt`, `messages` or token counts). A file is read as a stream ([`TraceReader`]), one
//! row at a time, and every row is checked: arrivals never go backwards nor below zero, and
//! an `input_length` fits its `hash_ids`. This module owns the rows and their offsets; the
//! prompts built from them are the `prompts` module's.

use std::path::{Path, PathBuf};

use bench_core::Nanos;
use serde::{Deserialize, Serialize};

use crate::Error;

pub(crate) mod prompts;
mod read;
pub(crate) mod source;
mod summary;

pub use read::TraceReader;
pub use summary::{peak_rate, scan, TraceSummary};

/// The formats of trace files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// Mooncake JSONL: `timestamp` (ms), `input_length`, `output_length`, `hash_ids` of
    /// 512-token blocks.
    Mooncake,
    /// Bailian (Qwen) JSONL: Mooncake's fields with 16-token blocks.
    Bailian,
    /// Azure LLM inference trace CSV: `TIMESTAMP` (a date-time), `ContextTokens`,
    /// `GeneratedTokens`.
    Azure,
    /// BurstGPT CSV: `Timestamp` (s), `Request tokens`, `Response tokens`, `Model`, `Log Type`.
    Burstgpt,
    /// bench's own JSONL: `timestamp` (ms) and a `prompt`, `messages` or `input_length`.
    Plain,
}

impl TraceFormat {
    /// The format named `s` (`mooncake`, `bailian`, `azure`, `burstgpt`, `plain`).
    pub fn parse(s: &str) -> Option<TraceFormat> {
        Some(match s.to_ascii_lowercase().as_str() {
            "mooncake" => TraceFormat::Mooncake,
            "bailian" => TraceFormat::Bailian,
            "azure" => TraceFormat::Azure,
            "burstgpt" => TraceFormat::Burstgpt,
            "plain" => TraceFormat::Plain,
            _ => return None,
        })
    }

    /// The format's name as `format=` spells it.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Mooncake => "mooncake",
            TraceFormat::Bailian => "bailian",
            TraceFormat::Azure => "azure",
            TraceFormat::Burstgpt => "burstgpt",
            TraceFormat::Plain => "plain",
        }
    }

    /// Tokens per hash id when `block_size` is not given.
    pub fn default_block_size(self) -> u32 {
        match self {
            TraceFormat::Bailian => 16,
            _ => 512,
        }
    }

    /// The unit of numeric timestamps when `time_unit` is not given (Azure's are dates).
    pub fn default_time_unit(self) -> TimeUnit {
        match self {
            TraceFormat::Burstgpt => TimeUnit::S,
            _ => TimeUnit::Ms,
        }
    }

    /// The columns the format needs, for error messages.
    pub fn needs(self) -> &'static str {
        match self {
            TraceFormat::Mooncake | TraceFormat::Bailian => {
                "timestamp, input_length, output_length, hash_ids"
            }
            TraceFormat::Azure => "TIMESTAMP, ContextTokens, GeneratedTokens",
            TraceFormat::Burstgpt => "Timestamp, Request tokens, Response tokens",
            TraceFormat::Plain => "timestamp and one of prompt, messages, input_length",
        }
    }
}

/// The unit of a trace's numeric timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
}

impl TimeUnit {
    /// `ns`, `us`, `ms` or `s`.
    pub fn parse(s: &str) -> Option<TimeUnit> {
        Some(match s {
            "ns" => TimeUnit::Ns,
            "us" => TimeUnit::Us,
            "ms" => TimeUnit::Ms,
            "s" => TimeUnit::S,
            _ => return None,
        })
    }

    /// Nanoseconds per unit.
    pub fn nanos(self) -> f64 {
        match self {
            TimeUnit::Ns => 1.0,
            TimeUnit::Us => 1e3,
            TimeUnit::Ms => 1e6,
            TimeUnit::S => 1e9,
        }
    }
}

/// A trace to replay, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceConfig {
    /// The file.
    pub path: PathBuf,
    /// Its format (given, or recognised from its first line).
    pub format: TraceFormat,
    /// The unit of numeric timestamps.
    pub time_unit: TimeUnit,
    /// Tokens per hash id.
    pub block_size: u32,
    /// Rows recorded before this offset from the first row are skipped; the replay's offsets
    /// count from here.
    pub start: Nanos,
    /// BurstGPT: keep only rows of this `Model`.
    pub model: Option<String>,
    /// BurstGPT: keep only rows of this `Log Type`.
    pub log_type: Option<String>,
    /// A fixed output length for every row (overrides the recorded one).
    pub output_tokens: Option<u32>,
    /// Use at most this many rows.
    pub samples: Option<u64>,
    /// Seed of the prompts' words (a fresh salt per run unless given).
    pub seed: u64,
    /// Whether `seed=` was given.
    pub seed_given: bool,
    /// What a row whose `input_length` does not fit its `hash_ids` becomes.
    pub fit: TraceFit,
}

/// What a row whose `input_length` does not fit its `hash_ids` (every block but the last
/// whole, the last with at least one token) becomes: `fit=` in `--data trace=`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TraceFit {
    /// A one-line error naming the file and the row (the default).
    #[default]
    Error,
    /// The row is sent with the nearest length its hash ids allow (`(k - 1) * block_size + 1`
    /// when shorter, `k * block_size` when longer), so its prefix sharing is the trace's
    /// exactly and only its length moves; the rows fitted are counted.
    Length,
}

impl TraceFit {
    /// `error` or `length`.
    pub fn parse(s: &str) -> Option<TraceFit> {
        match s {
            "error" => Some(TraceFit::Error),
            "length" => Some(TraceFit::Length),
            _ => None,
        }
    }
}

/// What a row asks to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceInput {
    /// `tokens` prompt tokens in blocks named by `hash_ids` (empty: a prompt shared with no
    /// other row).
    Blocks {
        /// Prompt tokens.
        tokens: u32,
        /// The blocks' names, in order.
        hash_ids: Vec<u64>,
    },
    /// A recorded prompt text (plain traces).
    Text(String),
}

/// One row of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRow {
    /// The row's line in the file (from 1, the header included).
    pub line: u64,
    /// Recorded arrival, after the first row (less the `start` offset).
    pub at: Nanos,
    /// The prompt.
    pub input: TraceInput,
    /// The recorded output length (`None`: not recorded).
    pub output_tokens: Option<u32>,
    /// Its `input_length` was moved to fit its hash ids (`fit=length`).
    pub fitted: bool,
    /// Its `session_id`: rows of one session are the turns of one conversation.
    pub session: Option<String>,
    /// A later turn's `delay` after the previous turn's answer (ns, unscaled).
    pub delay: Option<Nanos>,
}

/// An error about a trace file, naming its line (0: the file as a whole).
pub(crate) fn bad(path: &Path, line: u64, message: impl Into<String>) -> Error {
    Error::Trace {
        path: path.to_path_buf(),
        line,
        message: message.into(),
    }
}

/// Recognises a trace's format from its first non-empty line: a JSON object with `hash_ids`
/// (Bailian when it also has `chat_id`), a plain JSONL record, or a CSV header; anything else
/// is an error naming the columns seen and the ones each format needs.
pub fn detect(path: &Path) -> Result<TraceFormat, Error> {
    let file = std::fs::File::open(path).map_err(|e| Error::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut first = String::new();
    let (mut r, mut buf, mut n) = (std::io::BufReader::new(file), Vec::new(), 0u64);
    while let Some(line) =
        crate::lines::next_line(&mut r, &mut buf).map_err(|e| bad(path, n + 1, e.to_string()))?
    {
        n += 1;
        let line = line.map_err(|e| bad(path, n, e))?;
        if !line.trim().is_empty() {
            first = line;
            break;
        }
    }
    if first.is_empty() {
        return Err(bad(path, 0, "empty file, no rows"));
    }
    let columns: Vec<String> = match serde_json::from_str::<serde_json::Value>(&first) {
        Ok(serde_json::Value::Object(m)) => {
            let has = |k: &str| m.contains_key(k);
            if has("hash_ids") && has("chat_id") {
                return Ok(TraceFormat::Bailian);
            }
            if has("hash_ids") && has("timestamp") {
                return Ok(TraceFormat::Mooncake);
            }
            if has("timestamp")
                && ["prompt", "messages", "input_length"]
                    .iter()
                    .any(|k| has(k))
            {
                return Ok(TraceFormat::Plain);
            }
            m.keys().cloned().collect()
        }
        _ => {
            let cols: Vec<String> = first
                .split(',')
                .map(|c| c.trim().trim_matches('"').to_string())
                .collect();
            let has = |k: &str| cols.iter().any(|c| c == k);
            if has("TIMESTAMP") && has("ContextTokens") && has("GeneratedTokens") {
                return Ok(TraceFormat::Azure);
            }
            if has("Timestamp") && has("Request tokens") && has("Response tokens") {
                return Ok(TraceFormat::Burstgpt);
            }
            cols
        }
    };
    Err(bad(
        path,
        1,
        format!(
            "not a trace format bench knows (columns seen: {}); needs mooncake/bailian ({}), azure ({}), burstgpt ({}) or plain ({}), or give format=",
            columns.join(", "),
            TraceFormat::Mooncake.needs(),
            TraceFormat::Azure.needs(),
            TraceFormat::Burstgpt.needs(),
            TraceFormat::Plain.needs(),
        ),
    ))
}
