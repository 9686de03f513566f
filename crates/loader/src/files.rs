//! Real data: prompts streamed from `.jsonl`, `.json`, `.csv`, `.txt` and ShareGPT files.
//! Memory stays bounded by one record (plus a small read-ahead for JSON arrays), whatever the
//! file's size.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};

use bench_core::RequestSpec;
use bench_tokenizer::Tokenizer;
use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::lines::not_utf8;
use crate::spec::{FileConfig, FileFormat, ShareGptConfig};
use crate::Error;

/// Prompt columns tried in order when none is named.
pub const DEFAULT_COLUMNS: [&str; 3] = ["prompt", "text", "input"];
/// Prompt columns tried in order in parquet files (Hugging Face datasets), as vLLM's and
/// guidellm's dataset readers look for them: the above, then `question` (GSM8K and most QA
/// sets), `problem` (AIME, MATH), `instruction` (instruction sets).
pub const PARQUET_COLUMNS: [&str; 6] = [
    "prompt",
    "text",
    "input",
    "question",
    "problem",
    "instruction",
];
/// JSON array elements parsed ahead of use.
const READ_AHEAD: usize = 64;

/// One record of a file.
pub(crate) enum Row {
    /// A line of a `.txt` file: the prompt itself.
    Text(String),
    /// A JSON object or a CSV row (as strings).
    Object(Map<String, Value>),
    /// A JSON array element that is a bare string.
    Str(String),
}

fn read_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

fn open(path: &Path) -> Result<File, Error> {
    File::open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::MissingFile(path.to_path_buf())
        } else {
            read_err(path, e)
        }
    })
}

/// Checks, before anything is sent, that the file at `path` is UTF-8 text throughout, so that
/// bad bytes are refused as bad input naming their line rather than breaking the data stream
/// mid-run. Reads the file once, a line at a time (memory stays bounded by the longest line).
pub(crate) fn check_text(path: &Path) -> Result<(), Error> {
    let mut r = BufReader::with_capacity(1 << 16, open(path)?);
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| read_err(path, e))?;
        if n == 0 {
            return Ok(());
        }
        line += 1;
        if let Err(e) = std::str::from_utf8(&buf) {
            return Err(read_err(
                path,
                format!("line {line}: {}", not_utf8(&buf, &e)),
            ));
        }
    }
}

/// Streams the records of a file.
pub(crate) enum Reader {
    Lines {
        lines: std::io::Lines<BufReader<File>>,
        json: bool,
        line: u64,
    },
    Csv {
        records: csv::StringRecordsIntoIter<File>,
        headers: Vec<String>,
    },
    /// A JSON array parsed on a thread of its own, handed over through a bounded channel;
    /// dropping the receiver stops the parser.
    Json { rx: Receiver<Result<Value, String>> },
    /// Parquet rows, row group by row group, file after file ([`crate::parquet`]).
    Parquet(crate::parquet::ParquetRows),
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reader::Lines { .. } => "Reader::Lines",
            Reader::Csv { .. } => "Reader::Csv",
            Reader::Json { .. } => "Reader::Json",
            Reader::Parquet(_) => "Reader::Parquet",
        })
    }
}

struct SendEach(std::sync::mpsc::SyncSender<Result<Value, String>>);

impl<'de> Visitor<'de> for SendEach {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element::<Value>()? {
            if self.0.send(Ok(v)).is_err() {
                return Err(serde::de::Error::custom("reader dropped"));
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for SendEach {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl Reader {
    pub(crate) fn open(path: &Path, format: FileFormat) -> Result<Reader, Error> {
        // The container decides the reader; the format, what the records mean.
        if crate::parquet::is_parquet(path) && format.trace().is_none() {
            return Ok(Reader::Parquet(crate::parquet::ParquetRows::open(path)?));
        }
        let file = open(path)?;
        if let Some(t) = format.trace() {
            // Traces have their own reader (`trace`); `DataArgs::into_spec` routes them there.
            return Err(read_err(
                path,
                format!("format={} is a trace: give it as trace=", t.name()),
            ));
        }
        Ok(match format {
            FileFormat::Jsonl | FileFormat::Txt | FileFormat::Book => Reader::Lines {
                lines: BufReader::with_capacity(1 << 16, file).lines(),
                json: format == FileFormat::Jsonl,
                line: 0,
            },
            FileFormat::Csv => {
                let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(file);
                let headers = r
                    .headers()
                    .map_err(|e| read_err(path, e))?
                    .iter()
                    .map(str::to_string)
                    .collect();
                Reader::Csv {
                    records: r.into_records(),
                    headers,
                }
            }
            _ => {
                let (tx, rx) = sync_channel(READ_AHEAD);
                std::thread::Builder::new()
                    .name("bench-json-reader".into())
                    .spawn(move || {
                        let reader = BufReader::with_capacity(1 << 16, file);
                        let mut de = serde_json::Deserializer::from_reader(reader);
                        let sender = SendEach(tx.clone());
                        if let Err(e) = sender.deserialize(&mut de) {
                            if !e.to_string().contains("reader dropped") {
                                let _ = tx.send(Err(e.to_string()));
                            }
                        }
                    })
                    .map_err(|e| read_err(path, e))?;
                Reader::Json { rx }
            }
        })
    }

    /// The next record; malformed lines of a `.jsonl` are skipped with a warning.
    pub(crate) fn next_row(&mut self, path: &Path) -> Result<Option<Row>, Error> {
        match self {
            Reader::Lines { lines, json, line } => loop {
                let Some(l) = lines.next() else {
                    return Ok(None);
                };
                *line += 1;
                let l = l.map_err(|e| read_err(path, format!("line {line}: {e}")))?;
                if l.trim().is_empty() {
                    continue;
                }
                if !*json {
                    return Ok(Some(Row::Text(l)));
                }
                match serde_json::from_str::<Value>(&l) {
                    Ok(Value::Object(m)) => return Ok(Some(Row::Object(m))),
                    Ok(Value::String(s)) => return Ok(Some(Row::Str(s))),
                    Ok(_) => {
                        tracing::warn!(file = %path.display(), line = *line, "not a JSON object; skipped")
                    }
                    Err(e) => {
                        tracing::warn!(file = %path.display(), line = *line, error = %e, "malformed JSON; skipped")
                    }
                }
            },
            Reader::Csv { records, headers } => match records.next() {
                None => Ok(None),
                Some(Err(e)) => Err(read_err(path, e)),
                Some(Ok(r)) => Ok(Some(Row::Object(
                    headers
                        .iter()
                        .zip(r.iter())
                        .map(|(h, v)| (h.clone(), Value::String(v.to_string())))
                        .collect(),
                ))),
            },
            Reader::Parquet(rows) => Ok(rows.next_row()?.map(Row::Object)),
            Reader::Json { rx } => loop {
                match rx.recv() {
                    Err(_) => return Ok(None),
                    Ok(Err(e)) => {
                        return Err(read_err(path, format!("not a JSON array of records: {e}")))
                    }
                    Ok(Ok(Value::Object(m))) => return Ok(Some(Row::Object(m))),
                    Ok(Ok(Value::String(s))) => return Ok(Some(Row::Str(s))),
                    Ok(Ok(_)) => {
                        tracing::warn!(file = %path.display(), "array element is neither an object nor a string; skipped")
                    }
                }
            },
        }
    }
}

/// A data file read record by record, up to a number of used samples; `reset` starts it over.
/// The one place where every file source opens, limits and rewinds its file.
#[derive(Debug)]
pub(crate) struct Records {
    path: PathBuf,
    format: FileFormat,
    samples: Option<u64>,
    reader: Reader,
    used: u64,
}

impl Records {
    pub(crate) fn open(
        path: &Path,
        format: FileFormat,
        samples: Option<u64>,
    ) -> Result<Self, Error> {
        if !crate::parquet::is_parquet(path) {
            check_text(path)?;
        }
        Ok(Records {
            reader: Reader::open(path, format)?,
            path: path.to_path_buf(),
            format,
            samples,
            used: 0,
        })
    }

    pub(crate) fn path(&self) -> &PathBuf {
        &self.path
    }

    pub(crate) fn reset(&mut self) -> Result<(), Error> {
        self.reader = Reader::open(&self.path, self.format)?;
        self.used = 0;
        Ok(())
    }

    /// The next record; `None` at the end of the file or once `samples` records were used.
    pub(crate) fn next(&mut self) -> Result<Option<Row>, Error> {
        if self.samples.is_some_and(|s| self.used >= s) {
            return Ok(None);
        }
        self.reader.next_row(&self.path)
    }

    /// Counts the last record as used (records a source skips do not count).
    pub(crate) fn use_one(&mut self) {
        self.used += 1;
    }

    /// Records used so far.
    pub(crate) fn used(&self) -> u64 {
        self.used
    }
}

fn columns(m: &Map<String, Value>) -> String {
    m.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
}

/// A whole number of tokens from a JSON number or a numeric string.
fn as_count(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Prompts from `.jsonl`, `.json`, `.csv`, `.txt`.
#[derive(Debug)]
pub(crate) struct FileSource {
    config: FileConfig,
    tokenizer: Tokenizer,
    records: Records,
    column: Option<String>,
}

impl FileSource {
    pub(crate) fn new(config: FileConfig, tokenizer: Tokenizer) -> Result<Self, Error> {
        Ok(FileSource {
            records: Records::open(&config.path, config.format, config.samples)?,
            column: config.column.clone(),
            config,
            tokenizer,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        self.records.path()
    }

    pub(crate) fn reset(&mut self) -> Result<(), Error> {
        self.records.reset()
    }

    pub(crate) fn next_spec(&mut self) -> Result<Option<RequestSpec>, Error> {
        loop {
            let Some(row) = self.records.next()? else {
                return Ok(None);
            };
            let mut images = Vec::new();
            let (prompt, output) = match row {
                Row::Text(t) | Row::Str(t) => {
                    if let Some(c) = &self.config.output_column {
                        return Err(Error::UnknownColumn {
                            path: self.path().to_path_buf(),
                            column: format!("{c:?}"),
                            available: "none: records are bare strings".into(),
                        });
                    }
                    (t, None)
                }
                Row::Object(m) => match self.fields(&m)? {
                    Some(fields) => {
                        images = self.row_images(&m)?;
                        fields
                    }
                    None => continue,
                },
            };
            if prompt.trim().is_empty() {
                continue;
            }
            let tokens = self.tokenizer.try_encode(&prompt)?.len();
            self.records.use_one();
            return Ok(Some(RequestSpec {
                prompt_tokens: u32::try_from(tokens).unwrap_or(u32::MAX),
                prompt: prompt.into(),
                output_tokens: self.config.output_tokens.or(output),
                at: None,
                batch: Vec::new(),
                images,
            }));
        }
    }

    /// The images `image_column` names in a record (none without the option, or when the
    /// record has no such value): a string or a list of strings, each read by
    /// [`crate::images::from_reference`].
    fn row_images(&self, m: &Map<String, Value>) -> Result<Vec<bench_core::ImageInput>, Error> {
        let Some(col) = &self.config.image_column else {
            return Ok(Vec::new());
        };
        let base = self.path().parent().unwrap_or(Path::new("."));
        // A Hugging Face `Image` value is `{"bytes": ..., "path": ...}`: its bytes (a `data:`
        // URL, crate::parquet) when it has them, else its path.
        let image = |v: &'_ Value| -> Option<String> {
            match v {
                Value::String(s) => Some(s.clone()),
                Value::Object(o) => match (o.get("bytes"), o.get("path")) {
                    (Some(Value::String(b)), _) if !b.is_empty() => Some(b.clone()),
                    (_, Some(Value::String(p))) => Some(p.clone()),
                    _ => None,
                },
                _ => None,
            }
        };
        let refs: Vec<String> = match m.get(col) {
            None | Some(Value::Null) => Vec::new(),
            Some(v @ (Value::String(_) | Value::Object(_))) => image(v).into_iter().collect(),
            Some(Value::Array(a)) => a.iter().filter_map(image).collect(),
            Some(other) => {
                return Err(Error::Spec(format!(
                "{}: column {col:?} must hold an image path or URL, or a list of them, got {other}",
                self.path().display()
            )))
            }
        };
        refs.iter()
            .filter(|r| !r.trim().is_empty())
            .map(|r| crate::images::from_reference(r, base))
            .collect()
    }

    /// The prompt and output length of a record; `None` skips it (with a warning). A column
    /// missing from the first record is an error naming the columns there are.
    fn fields(&mut self, m: &Map<String, Value>) -> Result<Option<(String, Option<u32>)>, Error> {
        let path = self.path().to_path_buf();
        let first = self.records.used() == 0;
        let missing = |column: &str| Error::UnknownColumn {
            path: path.clone(),
            column: format!("{column:?}"),
            available: columns(m),
        };
        let column = self.prompt_column(m)?;
        let prompt = match m.get(&column) {
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                tracing::warn!(file = %path.display(), column, "prompt is not a string; record skipped");
                return Ok(None);
            }
            None if first => return Err(missing(&column)),
            None => {
                tracing::warn!(file = %path.display(), column, "record without the prompt column; skipped");
                return Ok(None);
            }
        };
        let Some(c) = &self.config.output_column else {
            return Ok(Some((prompt, None)));
        };
        match m.get(c) {
            None if first => Err(missing(c)),
            v => match v.and_then(as_count).filter(|n| *n > 0) {
                Some(n) => Ok(Some((prompt, Some(n)))),
                None => {
                    tracing::warn!(file = %path.display(), column = c, "no positive whole output length; record skipped");
                    Ok(None)
                }
            },
        }
    }

    /// The prompt column: the configured one, else the first of [`DEFAULT_COLUMNS`] in the
    /// first record (then kept for every record).
    fn prompt_column(&mut self, m: &Map<String, Value>) -> Result<String, Error> {
        if let Some(c) = &self.column {
            return Ok(c.clone());
        }
        let (names, said): (&[&str], &str) = if self.config.format == FileFormat::Parquet {
            (
                &PARQUET_COLUMNS,
                "\"prompt\", \"text\", \"input\", \"question\", \"problem\" or \"instruction\" (name one with --data-column)",
            )
        } else {
            (
                &DEFAULT_COLUMNS,
                "\"prompt\", \"text\" or \"input\" (name one with --data-column)",
            )
        };
        let found =
            names
                .iter()
                .find(|c| m.contains_key(**c))
                .ok_or_else(|| Error::UnknownColumn {
                    path: self.path().to_path_buf(),
                    column: said.into(),
                    available: columns(m),
                })?;
        self.column = Some(found.to_string());
        Ok(found.to_string())
    }
}

/// vLLM's ShareGPT filter: prompts of at least 4 tokens, replies of at least 4 (unless the
/// output length is fixed), prompts of at most 1,024 and prompt + reply of at most 2,048.
pub const SHAREGPT_MIN_TOKENS: usize = 4;
/// See [`SHAREGPT_MIN_TOKENS`].
pub const SHAREGPT_MAX_PROMPT: usize = 1024;
/// See [`SHAREGPT_MIN_TOKENS`].
pub const SHAREGPT_MAX_TOTAL: usize = 2048;

/// ShareGPT conversations: the first turn is the prompt, the second the reply whose length is
/// the output length (vLLM's `sample_sharegpt_requests`).
#[derive(Debug)]
pub(crate) struct ShareGptSource {
    config: ShareGptConfig,
    tokenizer: Tokenizer,
    records: Records,
    seen: u64,
}

impl ShareGptSource {
    pub(crate) fn new(config: ShareGptConfig, tokenizer: Tokenizer) -> Result<Self, Error> {
        Ok(ShareGptSource {
            records: Records::open(&config.path, FileFormat::Sharegpt, config.samples)?,
            config,
            tokenizer,
            seen: 0,
        })
    }

    pub(crate) fn path(&self) -> &PathBuf {
        self.records.path()
    }

    /// Conversations read so far (used or filtered out).
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }

    pub(crate) fn reset(&mut self) -> Result<(), Error> {
        self.records.reset()?;
        self.seen = 0;
        Ok(())
    }

    pub(crate) fn next_spec(&mut self) -> Result<Option<RequestSpec>, Error> {
        loop {
            let Some(row) = self.records.next()? else {
                return Ok(None);
            };
            self.seen += 1;
            let Row::Object(m) = row else { continue };
            // ShareGPT's `conversations` of `{"from", "value"}`, or (Hugging Face chat sets such
            // as lmsys-chat-1m) a `conversation` of `{"role", "content"}`.
            let Some(Value::Array(turns)) = m.get("conversations").or(m.get("conversation")) else {
                continue;
            };
            let text = |i: usize| -> Option<&str> {
                let t = turns.get(i)?;
                t.get("value").or(t.get("content"))?.as_str()
            };
            let (Some(prompt), Some(reply)) = (text(0), text(1)) else {
                continue;
            };
            let prompt_len = self.tokenizer.try_encode(prompt)?.len();
            let output_len = match self.config.output_tokens {
                Some(n) => n as usize,
                None => self.tokenizer.try_encode(reply)?.len(),
            };
            if prompt_len < SHAREGPT_MIN_TOKENS
                || (self.config.output_tokens.is_none() && output_len < SHAREGPT_MIN_TOKENS)
                || prompt_len > SHAREGPT_MAX_PROMPT
                || prompt_len + output_len > SHAREGPT_MAX_TOTAL
            {
                continue;
            }
            self.records.use_one();
            return Ok(Some(RequestSpec {
                prompt: prompt.into(),
                prompt_tokens: prompt_len as u32,
                output_tokens: Some(output_len as u32),
                at: None,
                batch: Vec::new(),
                images: Vec::new(),
            }));
        }
    }
}
