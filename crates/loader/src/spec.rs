//! What to load: the `--data` argument (or a profile's `data:` mapping) parsed and validated
//! into a [`DataSpec`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::synthetic::{SyntheticConfig, TokenDist};
pub use crate::tools::{ToolKeys, DEFAULT_TOOL_RESULT_TOKENS, DEFAULT_TOOL_TOKENS};
use crate::trace::{TimeUnit, TraceConfig, TraceFit, TraceFormat};
use crate::Error;

/// Seed used when none is given (guidellm's default).
pub const DEFAULT_SEED: u64 = 42;

/// The raw keys of `--data "k=v,..."` and of a profile's `data:` mapping, before validation.
/// Unknown keys are rejected with their name.
///
/// Synthetic data takes guidellm's keys (`prompt_tokens`, `prompt_tokens_stdev`,
/// `prompt_tokens_min`, `prompt_tokens_max`, the same four for `output_tokens`, `samples`,
/// `prefix_tokens`, `seed`) or vLLM's `random` keys (`input_len`, `output_len`, `range_ratio`,
/// `prefix_len`). A `path` makes it a data file, with `format`, `column`, `output_column`,
/// `output_tokens` (a fixed output length), `prompt_tokens` (slice length for `format=book`),
/// `samples` and `seed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataArgs {
    /// Mean prompt length in tokens (guidellm); the slice length for books.
    pub prompt_tokens: Option<i64>,
    /// Standard deviation of the prompt length (a normal distribution, clipped).
    pub prompt_tokens_stdev: Option<f64>,
    /// Least prompt length.
    pub prompt_tokens_min: Option<i64>,
    /// Greatest prompt length.
    pub prompt_tokens_max: Option<i64>,
    /// Mean output length in tokens; for data files, a fixed output length for every request.
    pub output_tokens: Option<i64>,
    /// Standard deviation of the output length.
    pub output_tokens_stdev: Option<f64>,
    /// Least output length.
    pub output_tokens_min: Option<i64>,
    /// Greatest output length.
    pub output_tokens_max: Option<i64>,
    /// Number of distinct requests (then the loader starts over, see `Loader::cycle`).
    pub samples: Option<i64>,
    /// Tokens of a prefix shared by every prompt (on top of `prompt_tokens`).
    pub prefix_tokens: Option<i64>,
    /// Seed of every random choice.
    pub seed: Option<u64>,
    /// vLLM: prompt length (same as `prompt_tokens`).
    pub input_len: Option<i64>,
    /// vLLM: output length (same as `output_tokens`).
    pub output_len: Option<i64>,
    /// vLLM: lengths drawn uniformly from `[len * (1 - r), len * (1 + r)]`, `0 <= r < 1`.
    pub range_ratio: Option<f64>,
    /// vLLM: shared prefix length (same as `prefix_tokens`).
    pub prefix_len: Option<i64>,
    /// Distinct prefixes of `prefix_tokens` tokens, prompt `i` taking prefix `i mod N` (vLLM's
    /// `prefix_repetition` `--prefix-repetition-num-prefixes`). Default 1: one shared prefix.
    pub prefix_count: Option<i64>,
    /// A data file.
    pub path: Option<PathBuf>,
    /// The file's format, when its extension does not say it.
    pub format: Option<FileFormat>,
    /// The prompt column (default: the first of `prompt`, `text`, `input` present).
    pub column: Option<String>,
    /// A column holding each request's output length in tokens.
    pub output_column: Option<String>,
    /// Sessions: user turns per conversation (synthetic: a count; files: `all` or at most N).
    pub turns: Option<Turns>,
    /// Sessions: tokens of a system prompt shared by every conversation (synthetic only).
    pub system_prompt_tokens: Option<i64>,
    /// Sessions: synthetic tool definitions sent with every turn (synthetic only).
    pub tools: Option<i64>,
    /// Sessions: tokens of each synthetic tool definition (default 200).
    pub tool_tokens: Option<i64>,
    /// Sessions: a JSON file holding a list of tool definitions, sent with every turn.
    pub tools_file: Option<PathBuf>,
    /// Sessions: tokens of the tool result answering a tool call (default 128).
    pub tool_result_tokens: Option<i64>,
    /// A trace file, replayed at its recorded times (`format` one of the trace formats, or
    /// recognised from the file).
    pub trace: Option<PathBuf>,
    /// Traces: the unit of numeric timestamps (`ns`, `us`, `ms`, `s`).
    pub time_unit: Option<String>,
    /// Traces: tokens per hash id (default 512; 16 for `bailian`).
    pub block_size: Option<i64>,
    /// Traces: skip the rows recorded in the first `start` seconds.
    pub start: Option<f64>,
    /// BurstGPT traces: keep only the rows of this `Model`.
    pub model: Option<String>,
    /// BurstGPT traces: keep only the rows of this `Log Type`.
    pub log_type: Option<String>,
    /// Traces: what to do with a row whose `input_length` does not fit its `hash_ids`:
    /// `error` (the default) or `length` (the nearest length that fits).
    pub fit: Option<String>,
    /// Inputs per request, for the embeddings and rerank backends (a rerank request's first
    /// input is its query, the others its documents). Default 1.
    pub batch_size: Option<i64>,
    /// Synthetic images per request, sent with the prompt (chat backend), 1 to 16.
    pub images: Option<i64>,
    /// Synthetic images: width in pixels (16 to 4096, default 512).
    pub image_width: Option<i64>,
    /// Synthetic images: height in pixels (16 to 4096, default 512).
    pub image_height: Option<i64>,
    /// Synthetic images: `png` (default) or `jpeg`.
    pub image_format: Option<String>,
    /// Synthetic JPEG images: quality 1 to 100 (default 90).
    pub image_quality: Option<i64>,
    /// Synthetic images: the same images in every request (`true`), so that a server's
    /// multimodal cache can hit; default new random pixels per request.
    pub image_repeat: Option<bool>,
    /// Data files: a column holding each record's image(s): a path (relative to the file's
    /// folder), an `http(s)://` or `data:` URL, or a list of them.
    pub image_column: Option<String>,
    /// Hugging Face datasets (`path=ORG/NAME`): the subset (vLLM's `--hf-subset`, the
    /// `datasets` library's configuration name). Default: the dataset's only one, else
    /// `default`.
    pub subset: Option<String>,
    /// Hugging Face datasets: the split (vLLM's `--hf-split`). Default `train`.
    pub split: Option<String>,
}

/// How many user turns a conversation has: `all` of a file's, or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Turns {
    /// A count (synthetic: exactly; files: at most).
    Count(i64),
    /// Every user turn of each conversation of a file.
    All(AllTurns),
}

/// The word `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllTurns {
    /// `all`.
    All,
}

/// Formats of data files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    /// One JSON object per line.
    Jsonl,
    /// A JSON array of objects (or of strings).
    Json,
    /// Comma-separated values with a header line.
    Csv,
    /// One prompt per non-empty line.
    Txt,
    /// ShareGPT conversations (a JSON array of `{"conversations": [...]}`).
    Sharegpt,
    /// A plain text cut into prompts of an exact token length.
    Book,
    /// Trace: Mooncake JSONL.
    Mooncake,
    /// Trace: Bailian JSONL.
    Bailian,
    /// Trace: Azure LLM inference CSV.
    Azure,
    /// Trace: BurstGPT CSV.
    Burstgpt,
    /// Trace: bench's plain JSONL.
    Plain,
    /// Parquet: rows with named columns, read row group by row group (a Hugging Face
    /// dataset's files); the columns are chosen as for JSONL.
    Parquet,
}

impl FileFormat {
    fn parse(s: &str) -> Option<FileFormat> {
        Some(match s.to_ascii_lowercase().as_str() {
            "jsonl" | "ndjson" => FileFormat::Jsonl,
            "json" => FileFormat::Json,
            "csv" => FileFormat::Csv,
            "txt" | "text" => FileFormat::Txt,
            "sharegpt" => FileFormat::Sharegpt,
            "book" => FileFormat::Book,
            "mooncake" => FileFormat::Mooncake,
            "bailian" => FileFormat::Bailian,
            "azure" => FileFormat::Azure,
            "burstgpt" => FileFormat::Burstgpt,
            "plain" => FileFormat::Plain,
            "parquet" => FileFormat::Parquet,
            _ => return None,
        })
    }

    /// The trace format this names, if it is one.
    pub fn trace(self) -> Option<TraceFormat> {
        Some(match self {
            FileFormat::Mooncake => TraceFormat::Mooncake,
            FileFormat::Bailian => TraceFormat::Bailian,
            FileFormat::Azure => TraceFormat::Azure,
            FileFormat::Burstgpt => TraceFormat::Burstgpt,
            FileFormat::Plain => TraceFormat::Plain,
            _ => return None,
        })
    }
}

/// Prompts read from a `.jsonl`, `.json`, `.csv` or `.txt` file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileConfig {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: FileFormat,
    /// Prompt column (default: the first of `prompt`, `text`, `input`); unused for `.txt`.
    pub column: Option<String>,
    /// Column with each request's output length.
    pub output_column: Option<String>,
    /// Fixed output length for every request (overrides `output_column`).
    pub output_tokens: Option<u32>,
    /// Use at most this many records.
    pub samples: Option<u64>,
    /// Inputs per request (`batch_size`, default 1).
    pub batch_size: u32,
    /// The column naming each record's images.
    pub image_column: Option<String>,
    /// Synthetic images sent with every prompt.
    pub images: Option<crate::images::SyntheticImages>,
}

/// ShareGPT conversations, filtered like vLLM's benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareGptConfig {
    /// The JSON file.
    pub path: PathBuf,
    /// Fixed output length (vLLM's `--sharegpt-output-len`); otherwise the reply's length.
    pub output_tokens: Option<u32>,
    /// Use at most this many conversations that pass the filter.
    pub samples: Option<u64>,
}

/// Conversations replayed turn by turn: ShareGPT (`conversations` of `from`/`value`) or
/// `.jsonl`/`.json` records with a `messages` list of `role`/`content`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationFileConfig {
    /// The file.
    pub path: PathBuf,
    /// Its format (`Sharegpt`, `Json` or `Jsonl`).
    pub format: FileFormat,
    /// At most this many user turns per conversation (`None`: all).
    pub max_turns: Option<u32>,
    /// Fixed output length for every turn; otherwise the recorded reply's length.
    pub output_tokens: Option<u32>,
    /// Use at most this many conversations.
    pub samples: Option<u64>,
}

/// Slices of exact token length cut from a plain-text file.
#[derive(Debug, Clone, PartialEq)]
pub struct BookConfig {
    /// The text file.
    pub path: PathBuf,
    /// Tokens per slice.
    pub prompt_tokens: u32,
    /// Output tokens asked for.
    pub output_tokens: Option<u32>,
    /// Number of slices (then starting over at a shifted place); `None`: endless.
    pub samples: Option<u64>,
    /// Inputs per request (`batch_size`, default 1).
    pub batch_size: u32,
    /// Tokens of the book's beginning put before every slice (vLLM's sonnet
    /// `--sonnet-prefix-len`); 0: none.
    pub prefix_tokens: u32,
}

/// What the loader produces, validated.
#[derive(Debug, Clone, PartialEq)]
pub enum DataSpec {
    /// Synthetic prompts.
    Synthetic(SyntheticConfig),
    /// A file of prompts.
    File(FileConfig),
    /// ShareGPT conversations.
    ShareGpt(ShareGptConfig),
    /// Text slices.
    Book(BookConfig),
    /// Conversations from a file, for sessions.
    Conversations(ConversationFileConfig),
    /// A trace replayed at its recorded times.
    Trace(TraceConfig),
}

impl DataSpec {
    /// Whether the data are conversations, so that the benchmark runs sessions.
    pub fn sessions(&self) -> bool {
        match self {
            DataSpec::Synthetic(c) => c.turns.is_some(),
            DataSpec::Conversations(_) => true,
            _ => false,
        }
    }

    /// Synthetic images of every request, when the data ask for them.
    pub fn synthetic_images(&self) -> Option<crate::images::SyntheticImages> {
        match self {
            DataSpec::Synthetic(c) => c.images,
            DataSpec::File(c) => c.images,
            _ => None,
        }
    }

    /// Inputs per request (`batch_size`): 1 unless the data say more.
    pub fn batch_size(&self) -> u32 {
        match self {
            DataSpec::Synthetic(c) => c.batch_size,
            DataSpec::File(c) => c.batch_size,
            DataSpec::Book(c) => c.batch_size,
            DataSpec::ShareGpt(_) | DataSpec::Conversations(_) | DataSpec::Trace(_) => 1,
        }
    }
}

fn count(key: &'static str, v: i64, min: i64) -> Result<u32, Error> {
    if v < min {
        return Err(Error::TooSmall {
            key,
            min,
            value: v.to_string(),
        });
    }
    u32::try_from(v).map_err(|_| Error::Spec(format!("{key}={v} is too large")))
}

fn either(
    a: (&'static str, Option<i64>),
    b: (&'static str, Option<i64>),
) -> Result<Option<(&'static str, i64)>, Error> {
    match (a.1, b.1) {
        (Some(_), Some(_)) => Err(Error::Spec(format!(
            "{} and {} are the same setting; give one",
            a.0, b.0
        ))),
        (Some(x), None) => Ok(Some((a.0, x))),
        (None, Some(x)) => Ok(Some((b.0, x))),
        (None, None) => Ok(None),
    }
}

#[allow(clippy::too_many_arguments)]
fn dist(
    mean: Option<(&'static str, i64)>,
    stdev: (&'static str, Option<f64>),
    min: (&'static str, Option<i64>),
    max: (&'static str, Option<i64>),
    range_ratio: Option<f64>,
) -> Result<Option<TokenDist>, Error> {
    let Some((mean_key, mean)) = mean else {
        for (key, given) in [
            (stdev.0, stdev.1.is_some()),
            (min.0, min.1.is_some()),
            (max.0, max.1.is_some()),
        ] {
            if given {
                return Err(Error::Orphan {
                    key,
                    needs: if key.starts_with("prompt") {
                        "prompt_tokens"
                    } else {
                        "output_tokens"
                    },
                });
            }
        }
        return Ok(None);
    };
    let mean_n = count(mean_key, mean, 1)?;
    let lo = min.1.map(|v| count(min.0, v, 1)).transpose()?;
    let hi = max.1.map(|v| count(max.0, v, 1)).transpose()?;
    if let (Some(l), Some(h)) = (lo, hi) {
        if l > h {
            return Err(Error::Spec(format!("{}={l} exceeds {}={h}", min.0, max.0)));
        }
    }
    if let Some(s) = stdev.1 {
        if range_ratio.is_some() {
            return Err(Error::Spec(format!(
                "{} and range_ratio both given; give one",
                stdev.0
            )));
        }
        if !(s.is_finite() && s >= 0.0) {
            return Err(Error::Spec(format!(
                "{} must be a number >= 0, got {s}",
                stdev.0
            )));
        }
        if s > 0.0 {
            return Ok(Some(TokenDist::Normal {
                mean: mean_n as f64,
                stdev: s,
                min: lo.unwrap_or(1),
                max: hi.unwrap_or(u32::MAX),
            }));
        }
    }
    if let Some(r) = range_ratio {
        // vLLM: randint(floor(len * (1 - r)), ceil(len * (1 + r))), at least 1.
        // The epsilon keeps 100 * 1.1 = 110.00000000000001 from becoming 111.
        let l = ((mean_n as f64 * (1.0 - r) + 1e-9).floor() as u32).max(1);
        let h = ((mean_n as f64 * (1.0 + r) - 1e-9).ceil() as u32).max(l);
        let (l, h) = (l.max(lo.unwrap_or(1)), h.min(hi.unwrap_or(u32::MAX)));
        return Ok(Some(if l >= h {
            TokenDist::Fixed(l)
        } else {
            TokenDist::Uniform { min: l, max: h }
        }));
    }
    let n = mean_n.max(lo.unwrap_or(1)).min(hi.unwrap_or(u32::MAX));
    Ok(Some(TokenDist::Fixed(n)))
}

impl DataArgs {
    /// Validates the keys into a [`DataSpec`]. Every error names the key at fault.
    pub fn into_spec(self) -> Result<DataSpec, Error> {
        let samples = self
            .samples
            .map(|v| count("samples", v, 1).map(u64::from))
            .transpose()?;
        if self.trace.is_some() || self.format.and_then(FileFormat::trace).is_some() {
            if self.batch_size.is_some() {
                return Err(Error::Spec(
                    "batch_size does not apply to a trace (its rows are single requests)".into(),
                ));
            }
            return self.trace_spec(samples);
        }
        let batch_size = self
            .batch_size
            .map(|v| count("batch_size", v, 1))
            .transpose()?
            .unwrap_or(1);
        let images = self.image_keys()?;
        if images.is_some() && (batch_size > 1 || self.turns.is_some()) {
            return Err(Error::Spec(
                "images apply to single chat requests, not with batch_size or turns".into(),
            ));
        }
        self.reject_trace_keys()?;
        if let Some(path) = self.path.clone() {
            return self.file_spec(path, samples, batch_size, images);
        }
        self.check_synthetic_keys()?;
        let (prompt, output, prefix_tokens) = self.synthetic_lengths()?;
        let (turns, system_prompt_tokens) = self.session_keys(prefix_tokens)?;
        if turns.is_some() && batch_size > 1 {
            return Err(Error::Spec(
                "batch_size does not apply to sessions (each turn is one request)".into(),
            ));
        }
        Ok(DataSpec::Synthetic(SyntheticConfig {
            prompt,
            output,
            samples,
            prefix_tokens,
            prefix_count: self.prefix_count(prefix_tokens)?,
            seed: self.seed.unwrap_or(DEFAULT_SEED),
            turns,
            system_prompt_tokens,
            tools: self.tool_keys(turns.is_some())?,
            seed_given: self.seed.is_some(),
            batch_size,
            images,
        }))
    }

    /// Synthetic data: no file-only key, and `range_ratio` with a prompt length, in `[0, 1)`.
    fn check_synthetic_keys(&self) -> Result<(), Error> {
        for (key, given) in [
            ("format", self.format.is_some()),
            ("column", self.column.is_some()),
            ("output_column", self.output_column.is_some()),
            ("subset", self.subset.is_some()),
            ("split", self.split.is_some()),
        ] {
            if given {
                return Err(Error::Orphan { key, needs: "path" });
            }
        }
        let Some(r) = self.range_ratio else {
            return Ok(());
        };
        if self.input_len.is_none() && self.prompt_tokens.is_none() {
            return Err(Error::Orphan {
                key: "range_ratio",
                needs: "input_len",
            });
        }
        if !(r.is_finite() && (0.0..1.0).contains(&r)) {
            return Err(Error::Spec(format!(
                "range_ratio must be in [0, 1), got {r}"
            )));
        }
        Ok(())
    }

    /// The prompt and output length distributions and the shared prefix length.
    fn synthetic_lengths(&self) -> Result<(TokenDist, Option<TokenDist>, u32), Error> {
        let prompt_mean = either(
            ("prompt_tokens", self.prompt_tokens),
            ("input_len", self.input_len),
        )?;
        let output_mean = either(
            ("output_tokens", self.output_tokens),
            ("output_len", self.output_len),
        )?;
        let prefix = either(
            ("prefix_tokens", self.prefix_tokens),
            ("prefix_len", self.prefix_len),
        )?;
        let prompt = dist(
            prompt_mean,
            ("prompt_tokens_stdev", self.prompt_tokens_stdev),
            ("prompt_tokens_min", self.prompt_tokens_min),
            ("prompt_tokens_max", self.prompt_tokens_max),
            self.range_ratio,
        )?
        .ok_or_else(|| {
            Error::Spec(
                "synthetic data needs prompt_tokens (or input_len), or give a file path".into(),
            )
        })?;
        let output = dist(
            output_mean,
            ("output_tokens_stdev", self.output_tokens_stdev),
            ("output_tokens_min", self.output_tokens_min),
            ("output_tokens_max", self.output_tokens_max),
            self.range_ratio,
        )?;
        let prefix_tokens = match prefix {
            Some((key, v)) => count(key, v, 0)?,
            None => 0,
        };
        Ok((prompt, output, prefix_tokens))
    }

    /// `prefix_count`: at least 1, and more than 1 only with a prefix.
    fn prefix_count(&self, prefix_tokens: u32) -> Result<u32, Error> {
        match self.prefix_count {
            None => Ok(1),
            Some(_) if prefix_tokens == 0 => Err(Error::Orphan {
                key: "prefix_count",
                needs: "prefix_tokens",
            }),
            Some(v) => count("prefix_count", v, 1),
        }
    }

    /// Synthetic sessions' tools: `tools` (a count) or `tools_file`, with `tool_tokens` and
    /// `tool_result_tokens`; every one needs `turns`.
    fn tool_keys(&self, sessions: bool) -> Result<Option<ToolKeys>, Error> {
        let given = [
            ("tools", self.tools.is_some()),
            ("tools_file", self.tools_file.is_some()),
            ("tool_tokens", self.tool_tokens.is_some()),
            ("tool_result_tokens", self.tool_result_tokens.is_some()),
        ];
        let Some(&(key, _)) = given.iter().find(|(_, g)| *g) else {
            return Ok(None);
        };
        if !sessions {
            return Err(Error::Orphan {
                key,
                needs: "turns",
            });
        }
        if self.tools.is_none() && self.tools_file.is_none() {
            return Err(Error::Orphan {
                key,
                needs: "tools",
            });
        }
        if self.tools.is_some() && self.tools_file.is_some() {
            return Err(Error::Spec(
                "tools (synthetic definitions) and tools_file exclude each other".into(),
            ));
        }
        if self.tools_file.is_some() && self.tool_tokens.is_some() {
            return Err(Error::Spec(
                "tool_tokens sizes synthetic definitions, not those of tools_file".into(),
            ));
        }
        Ok(Some(ToolKeys {
            count: self.tools.map_or(Ok(0), |v| count("tools", v, 1))?,
            tokens: self
                .tool_tokens
                .map_or(Ok(DEFAULT_TOOL_TOKENS), |v| count("tool_tokens", v, 1))?,
            file: self.tools_file.clone(),
            result_tokens: self
                .tool_result_tokens
                .map_or(Ok(DEFAULT_TOOL_RESULT_TOKENS), |v| {
                    count("tool_result_tokens", v, 1)
                })?,
        }))
    }

    /// Synthetic sessions: `turns` and `system_prompt_tokens` (which needs `turns`, and
    /// replaces `prefix_tokens` there).
    fn session_keys(&self, prefix_tokens: u32) -> Result<(Option<u32>, u32), Error> {
        let turns = match self.turns {
            None => None,
            Some(Turns::Count(n)) => Some(count("turns", n, 1)?),
            Some(Turns::All(_)) => {
                return Err(Error::Spec(
                    "turns=all applies to conversation files; synthetic sessions need a number of turns".into(),
                ))
            }
        };
        let system_prompt_tokens = match self.system_prompt_tokens {
            Some(_) if turns.is_none() => {
                return Err(Error::Orphan {
                    key: "system_prompt_tokens",
                    needs: "turns",
                });
            }
            Some(v) => count("system_prompt_tokens", v, 0)?,
            None => 0,
        };
        if turns.is_some() && prefix_tokens > 0 {
            return Err(Error::Spec(
                "prefix_tokens does not apply to sessions; use system_prompt_tokens for a prompt shared by every conversation".into(),
            ));
        }
        Ok((turns, system_prompt_tokens))
    }

    fn file_spec(
        self,
        path: PathBuf,
        samples: Option<u64>,
        batch_size: u32,
        images: Option<crate::images::SyntheticImages>,
    ) -> Result<DataSpec, Error> {
        self.reject_synthetic_keys(&path)?;
        let path = self.hub_dataset(path)?;
        if crate::parquet::is_parquet(&path) {
            crate::parquet::parts(&path)?;
        } else if path.is_dir() {
            return Err(Error::Read {
                path,
                message: "is a directory, not a data file".into(),
            });
        }
        if !path.is_file() && !crate::parquet::is_parquet(&path) {
            return Err(Error::MissingFile(path));
        }
        let format = match self.format {
            Some(f) => f,
            None => detect_format(&path)?,
        };
        let output_tokens = either(
            ("output_tokens", self.output_tokens),
            ("output_len", self.output_len),
        )?
        .map(|(k, v)| count(k, v, 1))
        .transpose()?;
        if batch_size > 1 && (format == FileFormat::Sharegpt || self.turns.is_some()) {
            return Err(Error::Spec(format!(
                "batch_size does not apply to conversations ({})",
                path.display()
            )));
        }
        if (images.is_some() || self.image_column.is_some())
            && !matches!(
                format,
                FileFormat::Jsonl
                    | FileFormat::Json
                    | FileFormat::Csv
                    | FileFormat::Txt
                    | FileFormat::Parquet
            )
        {
            return Err(Error::Spec(format!(
                "images and image_column apply to .jsonl, .json, .csv, .txt and .parquet files, not {}",
                path.display()
            )));
        }
        if self.image_column.is_some() && format == FileFormat::Txt {
            return Err(Error::Spec(format!(
                "image_column needs records with columns, not the lines of {}",
                path.display()
            )));
        }
        self.file_data(path, format, output_tokens, (samples, batch_size, images))
    }

    /// The data spec of a file of a known format; keys that do not apply to it are errors.
    fn file_data(
        self,
        path: PathBuf,
        format: FileFormat,
        output_tokens: Option<u32>,
        (samples, batch_size, images): (Option<u64>, u32, Option<crate::images::SyntheticImages>),
    ) -> Result<DataSpec, Error> {
        let not_for = |key: &'static str, given: bool| -> Result<(), Error> {
            if given {
                Err(Error::Spec(format!(
                    "{key} does not apply to {format:?} data ({})",
                    path.display()
                )))
            } else {
                Ok(())
            }
        };
        let (column, output_column) = (self.column.is_some(), self.output_column.is_some());
        if format == FileFormat::Book || format == FileFormat::Sharegpt || self.turns.is_some() {
            not_for("column", column)?;
            not_for("output_column", output_column)?;
        }
        if format != FileFormat::Book {
            not_for("prompt_tokens", self.prompt_tokens.is_some())?;
        }
        if format == FileFormat::Txt {
            not_for("column", column)?;
            not_for("output_column", output_column)?;
        }
        match format {
            FileFormat::Book => Ok(DataSpec::Book(BookConfig {
                prompt_tokens: match self.prompt_tokens {
                    Some(v) => count("prompt_tokens", v, 1)?,
                    None => {
                        return Err(Error::Spec(format!(
                            "format=book needs prompt_tokens, the length of each slice of {}",
                            path.display()
                        )))
                    }
                },
                path,
                output_tokens,
                samples,
                batch_size,
                prefix_tokens: match either(
                    ("prefix_tokens", self.prefix_tokens),
                    ("prefix_len", self.prefix_len),
                )? {
                    Some((k, v)) => count(k, v, 0)?,
                    None => 0,
                },
            })),
            _ if self.turns.is_some() => {
                if !matches!(
                    format,
                    FileFormat::Sharegpt
                        | FileFormat::Json
                        | FileFormat::Jsonl
                        | FileFormat::Parquet
                ) {
                    not_for("turns", true)?;
                }
                let max_turns = match self.turns {
                    Some(Turns::Count(n)) => Some(count("turns", n, 1)?),
                    _ => None,
                };
                Ok(DataSpec::Conversations(ConversationFileConfig {
                    path,
                    format,
                    max_turns,
                    output_tokens,
                    samples,
                }))
            }
            FileFormat::Sharegpt => Ok(DataSpec::ShareGpt(ShareGptConfig {
                path,
                output_tokens,
                samples,
            })),
            _ => Ok(DataSpec::File(FileConfig {
                path,
                format,
                column: self.column,
                output_column: self.output_column,
                output_tokens,
                samples,
                batch_size,
                image_column: self.image_column,
                images,
            })),
        }
    }

    /// The synthetic image keys: `images` and the keys that need it, each in range.
    fn image_keys(&self) -> Result<Option<crate::images::SyntheticImages>, Error> {
        use crate::images::{ImageFormat, SyntheticImages, MAX_IMAGES, SIDE};
        let Some(n) = self.images else {
            for (key, given) in [
                ("image_width", self.image_width.is_some()),
                ("image_height", self.image_height.is_some()),
                ("image_format", self.image_format.is_some()),
                ("image_quality", self.image_quality.is_some()),
                ("image_repeat", self.image_repeat.is_some()),
            ] {
                if given {
                    return Err(Error::Orphan {
                        key,
                        needs: "images",
                    });
                }
            }
            return Ok(None);
        };
        let within = |key: &str, v: i64, (lo, hi): (u32, u32)| -> Result<u32, Error> {
            if v < i64::from(lo) || v > i64::from(hi) {
                return Err(Error::Spec(format!(
                    "{key} must be in {lo}..={hi}, got {v}"
                )));
            }
            Ok(v as u32)
        };
        let count = within("images", n, (1, MAX_IMAGES))?;
        let width = within("image_width", self.image_width.unwrap_or(512), SIDE)?;
        let height = within("image_height", self.image_height.unwrap_or(512), SIDE)?;
        let format = match self.image_format.as_deref().unwrap_or("png") {
            "png" if self.image_quality.is_some() => {
                return Err(Error::Spec(
                    "image_quality applies to image_format=jpeg".into(),
                ))
            }
            "png" => ImageFormat::Png,
            "jpeg" | "jpg" => ImageFormat::Jpeg {
                quality: within("image_quality", self.image_quality.unwrap_or(90), (1, 100))? as u8,
            },
            other => {
                return Err(Error::Spec(format!(
                    "image_format must be png or jpeg, got {other:?}"
                )))
            }
        };
        Ok(Some(SyntheticImages {
            count,
            width,
            height,
            format,
            repeat: self.image_repeat.unwrap_or(false),
        }))
    }

    /// Keys of traces only, given without a trace.
    fn reject_trace_keys(&self) -> Result<(), Error> {
        for (key, given) in [
            ("time_unit", self.time_unit.is_some()),
            ("block_size", self.block_size.is_some()),
            ("start", self.start.is_some()),
            ("model", self.model.is_some()),
            ("log_type", self.log_type.is_some()),
            ("fit", self.fit.is_some()),
        ] {
            if given {
                return Err(Error::Orphan {
                    key,
                    needs: "trace",
                });
            }
        }
        Ok(())
    }

    /// A trace: its file, format (given or recognised), units and filters.
    fn trace_spec(self, samples: Option<u64>) -> Result<DataSpec, Error> {
        let path = match (self.trace.clone(), self.path.clone()) {
            (Some(_), Some(_)) => {
                return Err(Error::Spec("trace and path both given; give one".into()))
            }
            (Some(p), None) | (None, Some(p)) => p,
            (None, None) => {
                return Err(Error::Orphan {
                    key: "format",
                    needs: "trace",
                })
            }
        };
        self.reject_synthetic_keys(&path)?;
        for (key, given) in [
            ("column", self.column.is_some()),
            ("output_column", self.output_column.is_some()),
            ("turns", self.turns.is_some()),
            ("prompt_tokens", self.prompt_tokens.is_some()),
            ("subset", self.subset.is_some()),
            ("split", self.split.is_some()),
        ] {
            if given {
                return Err(Error::Spec(format!("{key} does not apply to a trace")));
            }
        }
        if path.is_dir() {
            return Err(Error::Read {
                path,
                message: "is a folder, not a trace file".into(),
            });
        }
        if !path.is_file() {
            return Err(Error::MissingFile(path));
        }
        let format = match self.format {
            None => crate::trace::detect(&path)?,
            Some(f) => f.trace().ok_or_else(|| {
                Error::Spec(
                    format!(
                    "format={f:?} is not a trace format (mooncake, bailian, azure, burstgpt, plain)"
                )
                    .to_lowercase(),
                )
            })?,
        };
        let time_unit = match self.time_unit.as_deref() {
            None => format.default_time_unit(),
            Some(_) if format == TraceFormat::Azure => {
                return Err(Error::Spec(
                    "time_unit does not apply to format=azure (its TIMESTAMP is a date-time)"
                        .into(),
                ))
            }
            Some(u) => TimeUnit::parse(u).ok_or_else(|| {
                Error::Spec(format!("time_unit must be ns, us, ms or s, got {u:?}"))
            })?,
        };
        if format != TraceFormat::Burstgpt && (self.model.is_some() || self.log_type.is_some()) {
            let key = if self.model.is_some() {
                "model"
            } else {
                "log_type"
            };
            return Err(Error::Spec(format!(
                "{key} applies to format=burstgpt only"
            )));
        }
        let start = match self.start {
            None => 0,
            Some(s) if s.is_finite() && s >= 0.0 => (s * 1e9).round() as u64,
            Some(s) => return Err(Error::Spec(format!("start must be seconds >= 0, got {s}"))),
        };
        let output_tokens = either(
            ("output_tokens", self.output_tokens),
            ("output_len", self.output_len),
        )?
        .map(|(k, v)| count(k, v, 1))
        .transpose()?;
        let block_size = match self.block_size {
            Some(v) => count("block_size", v, 1)?,
            None => format.default_block_size(),
        };
        let fit = match self.fit.as_deref() {
            None => TraceFit::Error,
            Some(f) => TraceFit::parse(f)
                .ok_or_else(|| Error::Spec(format!("fit must be error or length, got {f:?}")))?,
        };
        Ok(DataSpec::Trace(TraceConfig {
            path,
            format,
            time_unit,
            block_size,
            start,
            model: self.model,
            log_type: self.log_type,
            output_tokens,
            samples,
            seed: self.seed.unwrap_or(DEFAULT_SEED),
            seed_given: self.seed.is_some(),
            fit,
        }))
    }

    /// The data path itself, or (a path that does not exist shaped `ORG/NAME`) the parquet
    /// files of that Hugging Face dataset's `subset` and `split` in the hub cache
    /// ([`crate::hub`]). `subset` and `split` apply to datasets only.
    fn hub_dataset(&self, path: PathBuf) -> Result<PathBuf, Error> {
        let id = path.to_str().unwrap_or("");
        if path.exists() || !crate::hub::is_dataset_id(id) {
            for (key, given) in [
                ("subset", self.subset.is_some()),
                ("split", self.split.is_some()),
            ] {
                if given {
                    return Err(Error::Spec(format!(
                        "{key} applies to a Hugging Face dataset (path=ORG/NAME), not to the file {}",
                        path.display()
                    )));
                }
            }
            return Ok(path);
        }
        let config = bench_tokenizer::hub::HubConfig::from_env();
        crate::hub::resolve_or_download(&config, id, self.subset.as_deref(), self.split.as_deref())
    }

    /// A file takes none of the synthetic-only keys (a book, `format=book`, takes a prefix).
    fn reject_synthetic_keys(&self, path: &Path) -> Result<(), Error> {
        let book = self.format == Some(FileFormat::Book);
        let synthetic_only = [
            ("prompt_tokens_stdev", self.prompt_tokens_stdev.is_some()),
            ("prompt_tokens_min", self.prompt_tokens_min.is_some()),
            ("prompt_tokens_max", self.prompt_tokens_max.is_some()),
            ("output_tokens_stdev", self.output_tokens_stdev.is_some()),
            ("output_tokens_min", self.output_tokens_min.is_some()),
            ("output_tokens_max", self.output_tokens_max.is_some()),
            ("prefix_tokens", self.prefix_tokens.is_some() && !book),
            ("prefix_len", self.prefix_len.is_some() && !book),
            ("prefix_count", self.prefix_count.is_some()),
            ("range_ratio", self.range_ratio.is_some()),
            ("input_len", self.input_len.is_some()),
            ("system_prompt_tokens", self.system_prompt_tokens.is_some()),
            ("tools", self.tools.is_some()),
            ("tools_file", self.tools_file.is_some()),
            ("tool_tokens", self.tool_tokens.is_some()),
            ("tool_result_tokens", self.tool_result_tokens.is_some()),
        ];
        match synthetic_only.iter().find(|(_, given)| *given) {
            Some((key, _)) => Err(Error::Spec(format!(
                "{key} applies to synthetic data, not to the file {}",
                path.display()
            ))),
            None => Ok(()),
        }
    }
}

/// The format of a file from its extension; a `.json` holding ShareGPT conversations (a
/// `"conversations"` key near the start) is ShareGPT.
fn detect_format(path: &Path) -> Result<FileFormat, Error> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let format = FileFormat::parse(ext).ok_or_else(|| {
        Error::Spec(format!(
            "cannot tell the format of {} from its extension; add format=jsonl|json|csv|txt|sharegpt|book|parquet",
            path.display()
        ))
    })?;
    if format == FileFormat::Parquet {
        // vLLM's and guidellm's rule: a conversations column makes it ShareGPT-like.
        let columns = crate::parquet::columns(path)?;
        if columns
            .iter()
            .any(|c| c == "conversations" || c == "conversation")
        {
            return Ok(FileFormat::Sharegpt);
        }
        return Ok(format);
    }
    if format == FileFormat::Json {
        use std::io::Read;
        let mut head = vec![0u8; 64 * 1024];
        let n = std::fs::File::open(path)
            .and_then(|mut f| f.read(&mut head))
            .map_err(|e| Error::Read {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        if String::from_utf8_lossy(&head[..n]).contains("\"conversations\"") {
            return Ok(FileFormat::Sharegpt);
        }
    }
    Ok(format)
}

/// Turns one `k=v` value into JSON: integers and floats become numbers, the rest strings.
fn value(v: &str) -> serde_json::Value {
    if let Ok(i) = v.parse::<i64>() {
        return i.into();
    }
    if let Ok(u) = v.parse::<u64>() {
        return u.into();
    }
    if let Ok(f) = v.parse::<f64>() {
        if f.is_finite() {
            return f.into();
        }
    }
    v.into()
}

/// The seed a run's data was drawn with, as reports record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DataSeed {
    /// The seed in use.
    pub seed: u64,
    /// `true` when the user gave it (`seed=`: the prompts are reproduced exactly), `false`
    /// when it is the run's fresh salt.
    pub explicit: bool,
}

impl DataSpec {
    /// Salts synthetic data whose seed was not given with `salt` (fresh per run), and returns
    /// the seed in use; `None` for data that involves no random choice (files are read in
    /// order).
    pub fn salt(&mut self, salt: u64) -> Option<DataSeed> {
        match self {
            DataSpec::Synthetic(c) => {
                if !c.seed_given {
                    c.seed = salt;
                }
                Some(DataSeed {
                    seed: c.seed,
                    explicit: c.seed_given,
                })
            }
            DataSpec::Trace(c) => {
                if !c.seed_given {
                    c.seed = salt;
                }
                Some(DataSeed {
                    seed: c.seed,
                    explicit: c.seed_given,
                })
            }
            _ => None,
        }
    }

    /// Makes the data of trial `trial` of a repeated run (`--repeat`) fresh: synthetic data
    /// and traces take the seed in use plus `trial` (wrapping), so that no two trials send the
    /// same prompts; files are unchanged (their trials read on where the previous one
    /// stopped). Returns the seed in use, as [`DataSpec::salt`] does.
    pub fn for_trial(&mut self, trial: u32) -> Option<DataSeed> {
        let next = |seed: &mut u64| {
            if trial > 0 {
                *seed = seed.wrapping_add(u64::from(trial)) & ((1 << 53) - 1);
            }
        };
        let seed = match self {
            DataSpec::Synthetic(c) => {
                next(&mut c.seed);
                (c.seed, c.seed_given)
            }
            DataSpec::Trace(c) => {
                next(&mut c.seed);
                (c.seed, c.seed_given)
            }
            _ => return None,
        };
        Some(DataSeed {
            seed: seed.0,
            explicit: seed.1,
        })
    }

    /// Parses the `--data` argument:
    ///
    /// - `k=v,k=v` — the keys of [`DataArgs`] (synthetic unless `path=` is among them);
    /// - `FORMAT:PATH` — a file in that format (`jsonl`, `json`, `csv`, `txt`, `sharegpt`,
    ///   `book`; `book:` needs `prompt_tokens`, so use the `k=v` form for it);
    /// - `PATH` — a file, its format from the extension (`.json` holding ShareGPT is ShareGPT).
    ///
    /// `column` is `--data-column`, the prompt column of a file.
    pub fn parse(arg: &str, column: Option<&str>) -> Result<DataSpec, Error> {
        let arg = arg.trim();
        if arg.is_empty() {
            return Err(Error::Spec("empty".into()));
        }
        let mut args = if Path::new(arg).exists() || !arg.contains('=') {
            let (format, path) = match arg.split_once(':') {
                Some((f, p)) if FileFormat::parse(f).is_some() && !Path::new(arg).exists() => {
                    (FileFormat::parse(f), p)
                }
                _ => (None, arg),
            };
            DataArgs {
                path: Some(PathBuf::from(path)),
                format,
                ..DataArgs::default()
            }
        } else {
            let mut map = serde_json::Map::new();
            for item in arg.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (k, v) = item
                    .split_once('=')
                    .ok_or_else(|| Error::Spec(format!("expected key=value, got {item:?}")))?;
                let (k, v) = (k.trim(), v.trim());
                if map.contains_key(k) {
                    return Err(Error::Spec(format!("{k} given twice")));
                }
                let v = if matches!(
                    k,
                    "path"
                        | "format"
                        | "column"
                        | "output_column"
                        | "trace"
                        | "time_unit"
                        | "model"
                        | "log_type"
                        | "fit"
                        | "image_format"
                        | "image_column"
                        | "subset"
                        | "split"
                        | "tools_file"
                ) {
                    serde_json::Value::String(v.to_string())
                } else if k == "image_repeat" && matches!(v, "true" | "false") {
                    serde_json::Value::Bool(v == "true")
                } else {
                    value(v)
                };
                map.insert(k.to_string(), v);
            }
            serde_json::from_value::<DataArgs>(serde_json::Value::Object(map.clone())).map_err(
                |e| {
                    // Name the key: find the one entry that fails on its own.
                    let culprit = map.iter().find_map(|(k, v)| {
                        let one = serde_json::Map::from_iter([(k.clone(), v.clone())]);
                        serde_json::from_value::<DataArgs>(serde_json::Value::Object(one))
                            .err()
                            .map(|e| format!("{k}={v}: {e}"))
                    });
                    Error::Spec(culprit.unwrap_or_else(|| e.to_string()))
                },
            )?
        };
        if let Some(c) = column {
            args.column = Some(c.to_string());
        }
        args.into_spec()
    }

    /// Parses a YAML mapping with the keys of [`DataArgs`] (a profile's `data:` section).
    pub fn from_yaml(yaml: &str) -> Result<DataSpec, Error> {
        serde_yaml::from_str::<DataArgs>(yaml)
            .map_err(|e| Error::Spec(e.to_string()))?
            .into_spec()
    }
}
