//! The loader's source for traces: rows read as requests are needed, prompts built per row.

use std::collections::{HashMap, HashSet, VecDeque};

use bench_core::{ConversationSpec, RequestSpec};
use bench_tokenizer::Tokenizer;

use super::prompts::BlockPrompts;
use super::{scan, TraceConfig, TraceInput, TraceReader, TraceRow, TraceSummary};
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
    /// A trace with sessions: the later turns of each session not yet released, read ahead
    /// at the start of each pass, and the sessions already released.
    later: HashMap<String, VecDeque<TraceRow>>,
    released: HashSet<String>,
    /// Whether this pass read ahead already.
    ahead: bool,
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
            later: HashMap::new(),
            released: HashSet::new(),
            ahead: false,
        })
    }

    /// Whether the trace has sessions: it is then replayed as conversations
    /// ([`Self::next_conversation`]).
    pub(crate) fn sessions(&self) -> bool {
        self.summary.sessions > 0
    }

    /// The next session: a row and the later rows of its `session_id` as its turns (a row
    /// without one is a session of one turn). The first turn keeps its recorded offset in
    /// `at`; a later turn's `at` is its `delay` after the previous answer (0 without one).
    pub(crate) fn next_conversation(&mut self) -> Result<Option<ConversationSpec>, Error> {
        if !self.ahead {
            self.read_ahead()?;
            self.ahead = true;
        }
        loop {
            let Some(row) = self.reader.next_row()? else {
                return Ok(None);
            };
            let mut later = VecDeque::new();
            if let Some(id) = &row.session {
                if !self.released.insert(id.clone()) {
                    continue;
                }
                later = self.later.remove(id).unwrap_or_default();
            }
            let mut turns = vec![self.spec(row)?];
            for row in later {
                let delay = row.delay.unwrap_or(0);
                let mut t = self.spec(row)?;
                t.at = Some(delay);
                turns.push(t);
            }
            return Ok(Some(ConversationSpec {
                system: std::sync::Arc::from(""),
                system_tokens: 0,
                turns,
                tools: None,
            }));
        }
    }

    /// Reads the pass's rows once and keeps the later turns of every session (one entry per
    /// session row: what the memory of a session trace grows with).
    fn read_ahead(&mut self) -> Result<(), Error> {
        let mut reader = TraceReader::open(&self.config)?;
        let mut firsts = HashSet::new();
        while let Some(row) = reader.next_row()? {
            let Some(id) = row.session.clone() else {
                continue;
            };
            if !firsts.insert(id.clone()) {
                self.later.entry(id).or_default().push_back(row);
            }
        }
        Ok(())
    }

    pub(crate) fn summary(&self) -> &TraceSummary {
        &self.summary
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.config.path
    }

    pub(crate) fn reset(&mut self) -> Result<(), Error> {
        self.reader = TraceReader::open(&self.config)?;
        self.later.clear();
        self.released.clear();
        self.ahead = false;
        Ok(())
    }

    /// Starts a new replay pass: the first row again, with prompts salted for this pass (the
    /// same hash id gets the same text within a pass, other text in other passes).
    pub(crate) fn next_pass(&mut self) -> Result<(), Error> {
        self.pass += 1;
        self.reader = TraceReader::open(&self.config)?;
        self.later.clear();
        self.released.clear();
        self.ahead = false;
        self.prompts
            .reseed(super::prompts::mix(self.config.seed, self.pass));
        Ok(())
    }

    pub(crate) fn next_spec(&mut self) -> Result<Option<RequestSpec>, Error> {
        match self.reader.next_row()? {
            Some(row) => self.spec(row).map(Some),
            None => Ok(None),
        }
    }

    /// The request of `row`: its prompt built from its blocks (or its text), counted.
    fn spec(&mut self, row: TraceRow) -> Result<RequestSpec, Error> {
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
        Ok(RequestSpec {
            prompt: prompt.into(),
            prompt_tokens,
            output_tokens: row.output_tokens,
            at: Some(row.at),
            batch: Vec::new(),
            images: Vec::new(),
        })
    }
}
