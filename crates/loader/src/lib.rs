//! Request data for bench: the stream of [`RequestSpec`]s a benchmark sends, each with its
//! prompt, its exact prompt token count under the chosen tokenizer, and the output length to
//! ask for.
//!
//! This crate owns the `--data` argument ([`DataSpec::parse`], or [`DataSpec::from_yaml`] /
//! [`DataArgs`] for a profile's `data:` mapping), exact-length synthetic prompts
//! ([`synthetic`]), real datasets (`.jsonl`, `.json`, `.csv`, `.txt`, ShareGPT, text
//! slices), and traces ([`trace`]: recorded rows with their arrival times, prompts rebuilt to
//! share prefixes exactly as their hash ids say). It does not resolve tokenizers
//! (`bench-tokenizer` does), nor decide when anything is sent (the scheduler reads a trace's
//! [`bench_core::RequestSpec::at`]), nor send anything.
//!
//! # Use
//!
//! ```no_run
//! use bench_loader::{DataSpec, Loader};
//! use bench_tokenizer::Tokenizer;
//!
//! # fn main() -> Result<(), bench_loader::Error> {
//! let spec = DataSpec::parse("prompt_tokens=256,output_tokens=128", None)?;
//! let mut loader = Loader::new(spec, Tokenizer::builtin())?;
//! while let Some(spec) = loader.try_next()? {
//!     // spec.prompt has exactly spec.prompt_tokens tokens (the text itself, no template).
//!     # break;
//! }
//! # Ok(()) }
//! ```
//!
//! [`Loader::new`] checks everything it can up front (files exist, columns exist, the dataset
//! is not empty, the first request can be built) so the CLI can exit 2 before a run starts.
//! Requests are produced lazily, one per [`Loader::try_next`] call (or through the
//! [`Iterator`] impl, which logs and ends on an error). Finite datasets start over when
//! exhausted ([`Loader::cycle`], on by default) with one warning; synthetic data without
//! `samples` is endless.

use bench_core::{ConversationSpec, RequestSpec};
use bench_tokenizer::Tokenizer;

mod book;
mod conversations;
mod error;
pub mod files;
pub mod hub;
pub mod images;
mod lines;
mod parquet;
pub mod spec;
pub mod synthetic;
mod tools;
pub mod trace;

pub use error::Error;
pub use spec::{
    AllTurns, BookConfig, ConversationFileConfig, DataArgs, DataSeed, DataSpec, FileConfig,
    FileFormat, ShareGptConfig, SyntheticConfig, TokenDist, Turns,
};
pub use synthetic::{Composer, Mode};
pub use trace::{TraceConfig, TraceFit, TraceFormat, TraceSummary};

#[derive(Debug)]
enum Source {
    Synthetic(Box<synthetic::SyntheticSource>),
    File(files::FileSource),
    ShareGpt(files::ShareGptSource),
    Book(book::BookSource),
    Conversations(conversations::ConversationSource),
    Trace(Box<trace::source::TraceSource>),
}

/// What a source hands out: single requests, or conversations for sessions.
#[derive(Debug)]
enum Item {
    Request(RequestSpec),
    Conversation(ConversationSpec),
}

impl Source {
    fn sessions(&self) -> bool {
        match self {
            Source::Synthetic(s) => s.sessions(),
            Source::Conversations(_) => true,
            Source::Trace(s) => s.sessions(),
            _ => false,
        }
    }

    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        if !self.sessions() {
            return Ok(self.next_spec()?.map(Item::Request));
        }
        Ok(match self {
            Source::Synthetic(s) => s.next_conversation()?,
            Source::Conversations(s) => s.next_conversation()?,
            Source::Trace(s) => s.next_conversation()?,
            _ => None,
        }
        .map(Item::Conversation))
    }

    fn next_spec(&mut self) -> Result<Option<RequestSpec>, Error> {
        match self {
            Source::Synthetic(s) => s.next_spec(),
            Source::File(s) => s.next_spec(),
            Source::ShareGpt(s) => s.next_spec(),
            Source::Book(s) => s.next_spec(),
            Source::Trace(s) => s.next_spec(),
            Source::Conversations(_) => Ok(None),
        }
    }

    fn reset(&mut self) -> Result<(), Error> {
        match self {
            Source::Synthetic(s) => s.reset(),
            Source::File(s) => s.reset(),
            Source::ShareGpt(s) => s.reset(),
            Source::Book(s) => s.reset(),
            Source::Conversations(s) => s.reset(),
            Source::Trace(s) => s.reset(),
        }
    }
}

/// Produces the requests of a benchmark, lazily.
#[derive(Debug)]
pub struct Loader {
    source: Source,
    tokenizer: Tokenizer,
    /// The first request or conversation, built by `new` to check the dataset.
    peeked: Option<Item>,
    cycle: bool,
    produced: u64,
    in_pass: u64,
    warned_cycle: bool,
    failure: DataFailure,
    /// Inputs per request (`batch_size`): each request gathers this many items.
    batch_size: u32,
    /// Synthetic images of each request, encoded ahead on their own thread.
    images: Option<images::ImageStream>,
}

/// Where the [`Iterator`] side of a [`Loader`] leaves the error that ended its stream (a file
/// truncated or unreadable in the middle of a run), so that the caller can fail with it
/// instead of taking the end for an exhausted dataset. Clones share the slot.
#[derive(Debug, Clone, Default)]
pub struct DataFailure(std::sync::Arc<std::sync::OnceLock<String>>);

impl DataFailure {
    /// The error (naming the file and the cause) that ended the stream, if one did.
    pub fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

impl Loader {
    /// Prepares the stream and builds its first request, so that any configuration or data
    /// error surfaces here.
    pub fn new(spec: DataSpec, tokenizer: Tokenizer) -> Result<Loader, Error> {
        Self::build(spec, tokenizer, false)
    }

    /// Like [`Loader::new`], but every synthetic prompt is re-encoded with the tokenizer even
    /// when the composition proof (see [`synthetic`]) makes that unnecessary.
    pub fn new_verified(spec: DataSpec, tokenizer: Tokenizer) -> Result<Loader, Error> {
        Self::build(spec, tokenizer, true)
    }

    fn build(spec: DataSpec, tokenizer: Tokenizer, verify: bool) -> Result<Loader, Error> {
        let batch_size = spec.batch_size();
        let images = match (spec.synthetic_images(), &spec) {
            (Some(i), DataSpec::Synthetic(c)) => Some(images::ImageStream::new(i, c.seed)?),
            (Some(i), _) => Some(images::ImageStream::new(i, spec::DEFAULT_SEED)?),
            (None, _) => None,
        };
        let mut source = match spec {
            DataSpec::Synthetic(c) => {
                let mut composer = Composer::new(&tokenizer)?;
                if verify {
                    composer = composer.verify_every_prompt();
                }
                Source::Synthetic(Box::new(synthetic::SyntheticSource::new(c, composer)?))
            }
            DataSpec::File(c) => Source::File(files::FileSource::new(c, tokenizer.clone())?),
            DataSpec::ShareGpt(c) => {
                Source::ShareGpt(files::ShareGptSource::new(c, tokenizer.clone())?)
            }
            DataSpec::Book(c) => Source::Book(book::BookSource::new(c, tokenizer.clone())?),
            DataSpec::Conversations(c) => Source::Conversations(
                conversations::ConversationSource::new(c, tokenizer.clone())?,
            ),
            DataSpec::Trace(c) => {
                let mut composer = Composer::new(&tokenizer)?;
                if verify {
                    composer = composer.verify_every_prompt();
                }
                Source::Trace(Box::new(trace::source::TraceSource::new(c, composer)?))
            }
        };
        let peeked = source.next_item()?;
        if peeked.is_none() {
            let (path, reason) = match &source {
                Source::File(s) => (s.path().to_path_buf(), String::new()),
                Source::ShareGpt(s) => (
                    s.path().clone(),
                    format!(
                        " (none of {} conversations passed the length filter: prompt {}..={} tokens, prompt + reply <= {})",
                        s.seen(),
                        files::SHAREGPT_MIN_TOKENS,
                        files::SHAREGPT_MAX_PROMPT,
                        files::SHAREGPT_MAX_TOTAL
                    ),
                ),
                Source::Conversations(s) => (
                    s.path().clone(),
                    " (no conversation with a user turn followed by a reply)".to_string(),
                ),
                Source::Trace(s) => (s.path().to_path_buf(), String::new()),
                _ => (std::path::PathBuf::from("?"), String::new()),
            };
            return Err(Error::Empty { path, reason });
        }
        Ok(Loader {
            source,
            tokenizer,
            peeked,
            cycle: true,
            produced: 0,
            in_pass: 0,
            warned_cycle: false,
            failure: DataFailure::default(),
            batch_size,
            images,
        })
    }

    /// Whether a finite dataset starts over when exhausted (default `true`). When `false`,
    /// the stream ends.
    pub fn cycle(mut self, cycle: bool) -> Loader {
        self.cycle = cycle;
        self
    }

    /// The tokenizer counting the prompts.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The slot the [`Iterator`] side fills with the error that ended the stream.
    pub fn failure(&self) -> DataFailure {
        self.failure.clone()
    }

    /// The figures of a trace's rows (rows, recorded tokens, theoretical hit rate), read when
    /// the loader was made; `None` for other data.
    pub fn trace_summary(&self) -> Option<&TraceSummary> {
        match &self.source {
            Source::Trace(s) => Some(s.summary()),
            _ => None,
        }
    }

    /// Trace data: starts the trace over for the next benchmark, with prompts salted for the
    /// new pass (so it does not meet the prefix cache the previous pass left); nothing when no
    /// row was taken since the last start, or for other data.
    pub fn rewind(&mut self) -> Result<(), Error> {
        if let Source::Trace(s) = &mut self.source {
            if self.in_pass > 0 || self.peeked.is_none() {
                s.next_pass()?;
                self.peeked = None;
                self.in_pass = 0;
            }
        }
        Ok(())
    }

    /// Requests produced so far.
    pub fn produced(&self) -> u64 {
        self.produced
    }

    /// Whether the data are conversations: the benchmark then runs sessions and takes them
    /// with [`Loader::try_next_conversation`].
    pub fn sessions(&self) -> bool {
        self.source.sessions()
    }

    /// The next request; `Ok(None)` when a finite dataset is exhausted and cycling is off.
    /// Conversation data ([`Loader::sessions`]) give no single requests: `Ok(None)` at once.
    pub fn try_next(&mut self) -> Result<Option<RequestSpec>, Error> {
        if self.sessions() {
            return Ok(None);
        }
        let mut first = match self.next_item()? {
            Some(Item::Request(r)) => r,
            _ => return Ok(None),
        };
        self.gather(&mut first)?;
        if let Some(s) = &mut self.images {
            first.images.extend(s.next()?);
        }
        Ok(Some(first))
    }

    /// A batched request (`batch_size` > 1): the next items join `first` as its further
    /// inputs, their tokens added to its count. A finite dataset that ends (cycling off)
    /// leaves the last request short rather than dropping it.
    fn gather(&mut self, first: &mut RequestSpec) -> Result<(), Error> {
        if self.batch_size <= 1 {
            return Ok(());
        }
        first.batch.reserve_exact(self.batch_size as usize - 1);
        while first.inputs() < self.batch_size as usize {
            let Some(Item::Request(r)) = self.next_item()? else {
                break;
            };
            first.prompt_tokens = first.prompt_tokens.saturating_add(r.prompt_tokens);
            first.batch.push(r.prompt);
        }
        Ok(())
    }

    /// The next conversation: a session's turns (one-turn conversations for single-request
    /// data); `Ok(None)` when a finite dataset is exhausted and cycling is off.
    pub fn try_next_conversation(&mut self) -> Result<Option<ConversationSpec>, Error> {
        Ok(self.next_item()?.map(|item| match item {
            Item::Conversation(c) => c,
            Item::Request(r) => ConversationSpec {
                system: std::sync::Arc::from(""),
                system_tokens: 0,
                turns: vec![r],
                tools: None,
            },
        }))
    }

    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        if let Some(s) = self.peeked.take() {
            self.produced += 1;
            self.in_pass += 1;
            return Ok(Some(s));
        }
        let next = match self.source.next_item()? {
            Some(s) => Some(s),
            // A trace is a schedule: replayed once, never started over.
            None if self.cycle && self.in_pass > 0 && !matches!(self.source, Source::Trace(_)) => {
                if !self.warned_cycle {
                    self.warned_cycle = true;
                    tracing::warn!(
                        requests = self.in_pass,
                        "dataset exhausted; starting over (repeated prompts can hit the server's prefix cache)"
                    );
                }
                self.in_pass = 0;
                self.source.reset()?;
                self.source.next_item()?
            }
            None => None,
        };
        if next.is_some() {
            self.produced += 1;
            self.in_pass += 1;
        }
        Ok(next)
    }
}

impl Iterator for Loader {
    type Item = RequestSpec;

    /// [`Loader::try_next`]; an error ends the stream and is kept in [`Loader::failure`].
    fn next(&mut self) -> Option<RequestSpec> {
        match self.try_next() {
            Ok(s) => s,
            Err(e) => {
                // The run ends with this error (the caller reads [`Loader::failure`]): said
                // once, there, not here too.
                tracing::debug!(error = %e, "reading the dataset failed");
                let _ = self.failure.0.set(e.to_string());
                None
            }
        }
    }
}
