//! The loader's source for traces: rows read as requests are needed, prompts built per row.

use bench_core::RequestSpec;
use bench_tokenizer::Tokenizer;

use super::prompts::BlockPrompts;
use super::{scan, TraceConfig, TraceInput, TraceReader, TraceSummary};
use crate::synthetic::Composer;
use crate::Error;

#[derive(Debug)]
pub(crate) struct TraceSource {
    config: TraceConfig,
    reader: TraceReader,
    prompts: BlockPrompts,
    tokenizer: Tokenizer,
    summary: TraceSummary,
    /// Replay passes started before this one (each benchmark replays the trace afresh).
    pass: u64,
}

impl TraceSource {
    /// Checks the whole file first (one streamed pass), so a bad row anywhere is a
    /// configuration error before the run rather than a failure in the middle of it.
    pub(crate) fn new(config: TraceConfig, composer: Composer) -> Result<Self, Error> {
        let summary = scan(&config, false)?;
        let tokenizer = composer.tokenizer().clone();
        Ok(Self {
            reader: TraceReader::open(&config)?,
            prompts: BlockPrompts::new(composer, config.block_size, config.seed)?,
            config,
            tokenizer,
            summary,
            pass: 0,
        })
    }

    pub(crate) fn summary(&self) -> &TraceSummary {
        &self.summary
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.config.path
    }

    pub(crate) fn reset(&mut self) -> Result<(), Error> {
        self.reader = TraceReader::open(&self.config)?;
        Ok(())
    }

    /// Starts a new replay pass: the first row again, with prompts salted for this pass (the
    /// same hash id gets the same text within a pass, other text in other passes).
    pub(crate) fn next_pass(&mut self) -> Result<(), Error> {
        self.pass += 1;
        self.reader = TraceReader::open(&self.config)?;
        self.prompts
            .reseed(super::prompts::mix(self.config.seed, self.pass));
        Ok(())
    }

    pub(crate) fn next_spec(&mut self) -> Result<Option<RequestSpec>, Error> {
        let Some(row) = self.reader.next_row()? else {
            return Ok(None);
        };
        let (prompt, prompt_tokens) = match row.input {
            TraceInput::Blocks { tokens, hash_ids } => {
                (self.prompts.prompt(tokens, &hash_ids)?, tokens)
            }
            TraceInput::Text(text) => {
                let n = self.tokenizer.try_encode(&text)?.len();
                let n = u32::try_from(n).unwrap_or(u32::MAX);
                (text, n)
            }
        };
        Ok(Some(RequestSpec {
            prompt: prompt.into(),
            prompt_tokens,
            output_tokens: row.output_tokens,
            at: Some(row.at),
            batch: Vec::new(),
            images: Vec::new(),
        }))
    }
}
