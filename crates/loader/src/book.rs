//! Text slices ("book"): a plain-text file cut into prompts of an exact token length, each
//! starting where the previous one ended; after the end of the file, the next pass starts at a
//! shifted place so no slice repeats an earlier one's start. The file is read as needed, so
//! memory holds about one slice of text.

use std::fs::File;
use std::io::{BufRead, BufReader};

use bench_core::RequestSpec;
use bench_tokenizer::Tokenizer;

use crate::spec::BookConfig;
use crate::Error;

/// Attempts at finding an exact cut before moving on.
const MAX_CUTS: usize = 8;

#[derive(Debug)]
pub(crate) struct BookSource {
    config: BookConfig,
    tokenizer: Tokenizer,
    reader: BufReader<File>,
    eof: bool,
    /// Text read but not yet used.
    buf: String,
    /// Estimated bytes per token, learnt from the text.
    bytes_per_token: f64,
    pass: u64,
    used: u64,
    /// Slices made in the current pass.
    in_pass: u64,
    /// The book's first `prefix_tokens` tokens, put before every slice (with a newline).
    prefix: Option<String>,
}

impl BookSource {
    pub(crate) fn new(config: BookConfig, tokenizer: Tokenizer) -> Result<Self, Error> {
        let reader = Self::open(&config)?;
        crate::files::check_text(&config.path)?;
        Ok(BookSource {
            config,
            tokenizer,
            reader,
            eof: false,
            buf: String::new(),
            bytes_per_token: 4.0,
            pass: 0,
            used: 0,
            in_pass: 0,
            prefix: None,
        })
        .and_then(Self::with_prefix)
    }

    /// Cuts the book's first `prefix_tokens` tokens (exactly, as a slice is cut) as the prefix
    /// of every slice, then starts the slices from the beginning again.
    fn with_prefix(mut self) -> Result<Self, Error> {
        let p = self.config.prefix_tokens;
        if p == 0 {
            return Ok(self);
        }
        let body = std::mem::replace(&mut self.config.prompt_tokens, p);
        let first = self.next_spec();
        self.config.prompt_tokens = body;
        self.prefix = Some(first?.map(|s| s.prompt.to_string()).unwrap_or_default());
        self.reset()?;
        Ok(self)
    }

    fn open(config: &BookConfig) -> Result<BufReader<File>, Error> {
        File::open(&config.path)
            .map(|f| BufReader::with_capacity(1 << 16, f))
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Error::MissingFile(config.path.clone())
                } else {
                    Error::Read {
                        path: config.path.clone(),
                        message: e.to_string(),
                    }
                }
            })
    }

    pub(crate) fn reset(&mut self) -> Result<(), Error> {
        self.reader = Self::open(&self.config)?;
        self.eof = false;
        self.buf.clear();
        self.pass = 0;
        self.used = 0;
        self.in_pass = 0;
        Ok(())
    }

    /// Reads until `buf` holds at least `bytes` bytes or the file ends.
    fn fill(&mut self, bytes: usize) -> Result<(), Error> {
        while !self.eof && self.buf.len() < bytes {
            let n = self
                .reader
                .read_line(&mut self.buf)
                .map_err(|e| Error::Read {
                    path: self.config.path.clone(),
                    message: e.to_string(),
                })?;
            if n == 0 {
                self.eof = true;
            }
        }
        Ok(())
    }

    /// Starts the next pass over the file, shifted by a fraction of a slice so that slices
    /// start at new places.
    fn next_pass(&mut self) -> Result<(), Error> {
        self.pass += 1;
        self.in_pass = 0;
        self.reader = Self::open(&self.config)?;
        self.eof = false;
        self.buf.clear();
        // Shift by pass * (slice / 7) tokens' worth of bytes, to the next whitespace.
        let shift = ((self.pass % 7) as f64 * self.config.prompt_tokens as f64 / 7.0
            * self.bytes_per_token) as usize;
        self.fill(shift + 1)?;
        let mut cut = shift.min(self.buf.len());
        while cut < self.buf.len() && !self.buf.is_char_boundary(cut) {
            cut += 1;
        }
        let skip = self.buf[cut..]
            .find(char::is_whitespace)
            .map(|i| cut + i)
            .unwrap_or(self.buf.len());
        self.buf.drain(..skip);
        Ok(())
    }

    pub(crate) fn next_spec(&mut self) -> Result<Option<RequestSpec>, Error> {
        if self.config.samples.is_some_and(|s| self.used >= s) {
            return Ok(None);
        }
        let target = self.config.prompt_tokens as usize;
        loop {
            // Slices start at a word, not in the whitespace between words.
            let lead = self.buf.len() - self.buf.trim_start().len();
            self.buf.drain(..lead);
            let want = ((target as f64 * self.bytes_per_token * 1.1) as usize).max(256);
            self.fill(want)?;
            let lead = self.buf.len() - self.buf.trim_start().len();
            self.buf.drain(..lead);
            let enc = self
                .tokenizer
                .inner()
                .encode(self.buf.as_str(), false)
                .map_err(|e| bench_tokenizer::Error::Encode {
                    name: self.tokenizer.name().to_string(),
                    message: e.to_string(),
                })?;
            let have = enc.len();
            if have > 0 {
                self.bytes_per_token = (self.buf.len() as f64 / have as f64).clamp(1.0, 64.0);
            }
            if have < target {
                if !self.eof {
                    continue;
                }
                if self.in_pass == 0 {
                    if self.pass % 7 == 0 {
                        return Err(Error::Empty {
                            path: self.config.path.clone(),
                            reason: format!(
                                " (the file is shorter than prompt_tokens={target} tokens)"
                            ),
                        });
                    }
                    // Too little text after the shift: the next pass starts unshifted.
                    self.pass = (self.pass / 7 + 1) * 7 - 1;
                }
                self.next_pass()?;
                continue;
            }
            let offsets: Vec<usize> = enc.get_offsets().iter().map(|&(_, e)| e).collect();
            if let Some(spec) = self.exact_cut(&offsets, target)? {
                return self.prefixed(spec).map(Some);
            }
            self.skip_word();
        }
    }

    /// Cuts after token `k` of the buffer (token end offsets `ends`), re-encodes, and moves
    /// the cut until the count is exactly `target`; `None` when no cut here is exact.
    /// A slice behind the prefix, its count the joined text's (the prefix's and the slice's
    /// counts, give or take the tokens the newline between them makes).
    fn prefixed(&self, mut spec: RequestSpec) -> Result<RequestSpec, Error> {
        if let Some(p) = &self.prefix {
            let text = format!("{p}\n{}", spec.prompt);
            spec.prompt_tokens =
                u32::try_from(self.tokenizer.try_encode(&text)?.len()).unwrap_or(u32::MAX);
            spec.prompt = text.into();
        }
        Ok(spec)
    }

    fn exact_cut(&mut self, ends: &[usize], target: usize) -> Result<Option<RequestSpec>, Error> {
        let mut k = target;
        for _ in 0..MAX_CUTS {
            let Some(&end) = ends.get(k.saturating_sub(1)) else {
                return Ok(None);
            };
            let mut end = end;
            while end < self.buf.len() && !self.buf.is_char_boundary(end) {
                end += 1;
            }
            let end = end.min(self.buf.len());
            let text = &self.buf[..end];
            let c = self.tokenizer.try_encode(text)?.len();
            if c == target {
                let prompt: std::sync::Arc<str> = text.into();
                // The cut is at a token boundary, often inside a word: the next slice
                // starts at the next word, not with the rest of this one.
                let next_word = if self.buf[end..].starts_with(char::is_whitespace) {
                    end
                } else {
                    self.buf[end..]
                        .find(char::is_whitespace)
                        .map_or(self.buf.len(), |i| end + i)
                };
                self.buf.drain(..next_word);
                self.used += 1;
                self.in_pass += 1;
                return Ok(Some(RequestSpec {
                    prompt,
                    prompt_tokens: target as u32,
                    output_tokens: self.config.output_tokens,
                    at: None,
                    batch: Vec::new(),
                    images: Vec::new(),
                }));
            }
            k = if c > target {
                k.saturating_sub(c - target).max(1)
            } else {
                k + (target - c)
            };
        }
        Ok(None)
    }

    /// No exact cut at the buffer's start: drops its first word.
    fn skip_word(&mut self) {
        let skip = self
            .buf
            .find(char::is_whitespace)
            .unwrap_or(self.buf.len())
            .max(1);
        let skip = (skip..=self.buf.len())
            .find(|&i| self.buf.is_char_boundary(i))
            .unwrap_or(self.buf.len());
        self.buf.drain(..skip);
    }
}
