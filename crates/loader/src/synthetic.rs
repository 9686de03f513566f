//! Exact-length synthetic prompts.
//!
//! A prompt is a run of *words*: vocabulary tokens that are one space followed by ASCII letters
//! (`" river"`), each of which decodes and re-encodes to exactly one token
//! ([`Tokenizer::single_token_words`]). When a tokenizer passes the *composition proof* at load
//! time, a run of `n` such words is exactly `n` tokens, so prompts are built at memory speed:
//!
//! 1. every word re-encodes alone to its one token (checked by `single_token_words`);
//! 2. no vocabulary token contains an ASCII letter followed by the word-start marker (`Ġ` or
//!    `▁`), so no token can span the boundary between two words, and BPE merges inside each
//!    word proceed as if the word were alone;
//! 3. the tokenizer's real encoding of a calibration text (every word once, in shuffled order,
//!    twice) is exactly the words' tokens, in order: the normalizer and pre-tokenizer split
//!    nothing differently in context.
//!
//! A tokenizer failing the proof (or [`Composer::verify_every_prompt`]) gets every prompt
//! re-encoded with the real tokenizer and adjusted until its count is exact; a tokenizer with
//! no such words at all gets prompts of random tokens, decoded, re-encoded and adjusted
//! (vLLM's method, but exact or an error).

use std::sync::Arc;

use bench_core::{ConversationSpec, RequestSpec};
use bench_tokenizer::Tokenizer;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::Error;

/// A distribution of token counts. Every draw is at least 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TokenDist {
    /// Always this count.
    Fixed(u32),
    /// Normal around `mean`, rounded, clipped to `[min, max]` (guidellm's `*_stdev`).
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        stdev: f64,
        /// Least value.
        min: u32,
        /// Greatest value.
        max: u32,
    },
    /// Uniform over `[min, max]` (vLLM's `range_ratio`).
    Uniform {
        /// Least value.
        min: u32,
        /// Greatest value.
        max: u32,
    },
}

impl TokenDist {
    /// The least count this distribution can draw.
    pub fn min(&self) -> u32 {
        match *self {
            TokenDist::Fixed(n) => n,
            TokenDist::Normal { min, .. } | TokenDist::Uniform { min, .. } => min,
        }
    }

    /// The greatest count this distribution can draw.
    pub fn max(&self) -> u32 {
        match *self {
            TokenDist::Fixed(n) => n,
            TokenDist::Normal { max, .. } | TokenDist::Uniform { max, .. } => max,
        }
    }

    /// Draws one count.
    pub fn sample<R: rand::Rng>(&self, rng: &mut R) -> u32 {
        match *self {
            TokenDist::Fixed(n) => n,
            TokenDist::Normal {
                mean,
                stdev,
                min,
                max,
            } => {
                let x = match rand_distr::Normal::new(mean, stdev) {
                    Ok(d) => rand_distr::Distribution::sample(&d, rng),
                    Err(_) => mean,
                };
                (x.round().clamp(min as f64, max as f64)) as u32
            }
            TokenDist::Uniform { min, max } => rng.random_range(min..=max),
        }
    }
}

/// Synthetic prompts of exact token counts.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticConfig {
    /// Prompt tokens, not counting the shared prefix.
    pub prompt: TokenDist,
    /// Output tokens asked for; `None` lets the server decide.
    pub output: Option<TokenDist>,
    /// Distinct requests before starting over; `None` for an endless stream.
    pub samples: Option<u64>,
    /// Tokens of a prefix shared by every prompt (0: none, every prompt starts differently).
    pub prefix_tokens: u32,
    /// Distinct prefixes (at least 1): prompt `i` starts with prefix `i mod prefix_count`.
    pub prefix_count: u32,
    /// Seed.
    pub seed: u64,
    /// Sessions: user turns per conversation (`None`: single requests, no sessions).
    pub turns: Option<u32>,
    /// Sessions: tokens of the system prompt shared by every conversation (0: none).
    pub system_prompt_tokens: u32,
    /// Sessions: tool definitions and tool results (`None`: no tools).
    pub tools: Option<crate::tools::ToolKeys>,
    /// Whether `seed=` was given. Without it a run replaces the seed with a fresh salt
    /// ([`crate::spec::DataSpec::salt`]), so a repeated run does not send the prompts of the previous one
    /// again (and meet the server's prefix cache).
    pub seed_given: bool,
    /// Inputs per request (`batch_size`, default 1).
    pub batch_size: u32,
    /// Synthetic images sent with every prompt.
    pub images: Option<crate::images::SyntheticImages>,
}

impl crate::tools::Texts for Composer {
    fn count(&self, text: &str) -> u32 {
        Composer::count(self, text)
    }

    fn compose_text<R: Rng>(&self, tokens: u32, rng: &mut R) -> Result<String, Error> {
        self.compose("", 0, &[], tokens, rng)
    }
}

/// Seed of the calibration text's shuffle (fixed: the proof must not depend on the data seed).
const CALIBRATION_SEED: u64 = 0x000c_a11b_8a7e;
/// Attempts at adjusting a prompt to its exact count before giving up.
const MAX_ADJUST: usize = 12;

/// The material prompts are built from, for one tokenizer.
#[derive(Debug, Clone)]
pub struct Composer {
    tokenizer: Tokenizer,
    /// Word texts (`" river"`), or for tokenizers without words, decoded single tokens.
    words: Arc<[Box<str>]>,
    /// The token id of each entry of `words` (random-token mode: the ids to draw from).
    ids: Arc<[u32]>,
    mode: Mode,
}

/// How prompts are built and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Words, exact by the composition proof: a run of `n` words is `n` tokens.
    Proven,
    /// Words, every prompt re-encoded and adjusted.
    Checked,
    /// Random tokens decoded, every prompt re-encoded and adjusted.
    RandomTokens,
}

impl Composer {
    /// The tokens of `text` by the composer's tokenizer.
    pub(crate) fn count(&self, text: &str) -> u32 {
        u32::try_from(self.tokenizer.count(text)).unwrap_or(u32::MAX)
    }

    /// Prepares prompt material for `tokenizer` and runs the composition proof (a few
    /// milliseconds for small vocabularies, a few hundred for 128k-token ones).
    pub fn new(tokenizer: &Tokenizer) -> Result<Composer, Error> {
        // The proof is costly for large vocabularies and the same for every loader of a
        // tokenizer: kept with the tokenizer.
        let material = tokenizer.memo(|| Material::new(tokenizer));
        let Some((words, ids, mode)) = material.0.clone() else {
            return Err(Error::Inexact {
                tokenizer: tokenizer.name().to_string(),
                tokens: 1,
            });
        };
        Ok(Composer {
            tokenizer: tokenizer.clone(),
            words,
            ids,
            mode,
        })
    }

    /// Re-encodes every prompt with the tokenizer even when the proof holds (slower; tests use
    /// it to check the proven path).
    pub fn verify_every_prompt(mut self) -> Composer {
        if self.mode == Mode::Proven {
            self.mode = Mode::Checked;
        }
        self
    }

    /// How prompts are built.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The words (or, for [`Mode::RandomTokens`], decoded single tokens) prompts are made of.
    pub(crate) fn words(&self) -> &[Box<str>] {
        &self.words
    }

    /// Number of distinct first tokens available: prompts `i` and `j` with
    /// `i != j (mod starts)` start with different tokens.
    pub fn starts(&self) -> usize {
        if self.mode == Mode::RandomTokens {
            self.ids.len()
        } else {
            self.words.len()
        }
    }

    /// Appends to `out` a text of exactly `n` tokens beginning with entries `first` (then
    /// random ones); `pre` is text already before it with `pre_tokens` tokens, and the count
    /// of `pre + text` is what is made exact.
    pub(crate) fn compose<R: Rng>(
        &self,
        pre: &str,
        pre_tokens: u32,
        first: &[usize],
        n: u32,
        rng: &mut R,
    ) -> Result<String, Error> {
        let n_us = n as usize;
        let pool = self.starts();
        let mut picks: Vec<usize> = Vec::with_capacity(n_us);
        picks.extend(first.iter().take(n_us).map(|&i| i % pool));
        while picks.len() < n_us {
            picks.push(rng.random_range(0..pool));
        }
        let target = (pre_tokens as usize) + n_us;
        match self.mode {
            Mode::Proven => Ok(self.joined(pre, &picks)),
            Mode::Checked => self.compose_checked(pre, picks, target, rng),
            Mode::RandomTokens => self.compose_random_tokens(pre, &picks, target, rng),
        }
    }

    /// `pre` followed by the words `picks`.
    fn joined(&self, pre: &str, picks: &[usize]) -> String {
        let mut s = String::with_capacity(pre.len() + picks.len() * 8);
        s.push_str(pre);
        for &i in picks {
            s.push_str(&self.words[i]);
        }
        s
    }

    /// [`Mode::Checked`]: the words `picks` after `pre`, encoded and trimmed or extended by
    /// random words until the whole is `target` tokens.
    fn compose_checked<R: Rng>(
        &self,
        pre: &str,
        mut picks: Vec<usize>,
        target: usize,
        rng: &mut R,
    ) -> Result<String, Error> {
        let pool = self.starts();
        for _ in 0..MAX_ADJUST {
            let s = self.joined(pre, &picks);
            let c = self.tokenizer.try_encode(&s)?.len();
            if c == target {
                return Ok(s);
            }
            if c > target {
                let drop = (c - target).min(picks.len().saturating_sub(1));
                if drop == 0 {
                    break;
                }
                picks.truncate(picks.len() - drop);
            } else {
                for _ in 0..target - c {
                    picks.push(rng.random_range(0..pool));
                }
            }
        }
        Err(self.inexact(target))
    }

    /// [`Mode::RandomTokens`]: the token ids `picks` decoded after `pre`, re-encoded and
    /// trimmed or extended by random ids until the whole is `target` tokens.
    fn compose_random_tokens<R: Rng>(
        &self,
        pre: &str,
        picks: &[usize],
        target: usize,
        rng: &mut R,
    ) -> Result<String, Error> {
        let pool = self.starts();
        let mut ids: Vec<u32> = picks.iter().map(|&i| self.ids[i]).collect();
        for _ in 0..MAX_ADJUST {
            let body = self.tokenizer.decode(&ids);
            let mut s = String::with_capacity(pre.len() + body.len() + 1);
            s.push_str(pre);
            // Keep the prefix's last token from merging with the body.
            if !pre.is_empty() && !body.starts_with(char::is_whitespace) {
                s.push(' ');
            }
            s.push_str(&body);
            let c = self.tokenizer.try_encode(&s)?.len();
            if c == target {
                return Ok(s);
            }
            // Continue from what the text really encodes to, trimmed or extended.
            let mut again = self.tokenizer.try_encode(&body)?;
            if c > target {
                let keep = again.len().saturating_sub(c - target).max(1);
                again.truncate(keep);
            } else {
                for _ in 0..target - c {
                    again.push(self.ids[rng.random_range(0..pool)]);
                }
            }
            ids = again;
        }
        Err(self.inexact(target))
    }

    fn inexact(&self, target: usize) -> Error {
        Error::Inexact {
            tokenizer: self.tokenizer.name().to_string(),
            tokens: target as u64,
        }
    }
}

/// What [`Composer::new`] derives from a tokenizer, cached with it (`None`: an empty
/// vocabulary).
#[allow(clippy::type_complexity)]
struct Material(Option<(Arc<[Box<str>]>, Arc<[u32]>, Mode)>);

impl Material {
    fn new(tokenizer: &Tokenizer) -> Material {
        let words = tokenizer.single_token_words();
        if words.len() < 16 {
            // Random-token mode: every non-special token id.
            let added = tokenizer.inner().get_added_tokens_decoder();
            let mut ids: Vec<u32> = tokenizer
                .inner()
                .get_vocab(false)
                .into_values()
                .filter(|id| !added.contains_key(id))
                .collect();
            ids.sort_unstable();
            if ids.is_empty() {
                return Material(None);
            }
            tracing::debug!(
                tokenizer = tokenizer.name(),
                "no single-token words: random-token prompts"
            );
            return Material(Some((
                Arc::from(Vec::<Box<str>>::new()),
                ids.into(),
                Mode::RandomTokens,
            )));
        }
        let texts: Vec<Box<str>> = words.iter().map(|(_, t)| t.as_str().into()).collect();
        let ids: Vec<u32> = words.iter().map(|(id, _)| *id).collect();
        let proven = composition_proof(tokenizer, &texts, &ids);
        if !proven {
            tracing::debug!(
                tokenizer = tokenizer.name(),
                "composition proof failed: every prompt re-encoded"
            );
        }
        let mode = if proven { Mode::Proven } else { Mode::Checked };
        Material(Some((texts.into(), ids.into(), mode)))
    }
}

/// Conditions 2 and 3 of the module docs (condition 1 holds by construction of the words).
fn composition_proof(tokenizer: &Tokenizer, texts: &[Box<str>], ids: &[u32]) -> bool {
    let tk = tokenizer.inner();
    // The word-start marker: the first character of a word token's string (`Ġ`, `▁`, ...).
    let Some(marker) = tk.id_to_token(ids[0]).and_then(|t| t.chars().next()) else {
        return false;
    };
    if marker.is_ascii_alphabetic() {
        return false;
    }
    let spans_boundary = tk.get_vocab(true).keys().any(|tok| {
        let mut prev_letter = false;
        tok.chars().any(|c| {
            let hit = prev_letter && c == marker;
            prev_letter = c.is_ascii_alphabetic();
            hit
        })
    });
    if spans_boundary {
        return false;
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(CALIBRATION_SEED);
    for _ in 0..2 {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.shuffle(&mut rng);
        let text: String = order.iter().map(|&i| &*texts[i]).collect();
        let expected: Vec<u32> = order.iter().map(|&i| ids[i]).collect();
        match tokenizer.try_encode(&text) {
            Ok(got) if got == expected => {}
            _ => return false,
        }
    }
    true
}

/// The endless (or `samples`-long) stream of synthetic requests.
#[derive(Debug)]
pub(crate) struct SyntheticSource {
    config: SyntheticConfig,
    composer: Composer,
    rng: rand::rngs::StdRng,
    /// The shared prefixes (one, or `prefix_count`) and their token count.
    prefixes: Vec<(String, u32)>,
    system: (Arc<str>, u32),
    /// Sessions' tools, the same for every conversation.
    tools: Option<Arc<bench_core::Tools>>,
    /// A seeded permutation of the word pool: prompt `i` starts with `perm[i % n]`, then
    /// `perm[(i / n) % n]`, so the first two tokens of any two of `n²` prompts differ.
    perm: Vec<usize>,
    index: u64,
}

impl SyntheticSource {
    pub(crate) fn new(config: SyntheticConfig, composer: Composer) -> Result<Self, Error> {
        let mut s = SyntheticSource {
            rng: rand::rngs::StdRng::seed_from_u64(config.seed),
            prefixes: Vec::new(),
            system: (Arc::from(""), 0),
            tools: None,
            perm: Vec::new(),
            index: 0,
            config,
            composer,
        };
        s.reset()?;
        Ok(s)
    }

    /// Back to the first request (the same sequence again).
    pub(crate) fn reset(&mut self) -> Result<(), Error> {
        self.rng = rand::rngs::StdRng::seed_from_u64(self.config.seed);
        let mut perm: Vec<usize> = (0..self.composer.starts()).collect();
        perm.shuffle(&mut self.rng);
        self.perm = perm;
        self.prefixes = self.make_prefixes()?;
        let system = self.config.system_prompt_tokens;
        self.system = if system > 0 {
            let text = self.composer.compose("", 0, &[], system, &mut self.rng)?;
            (Arc::from(text), system)
        } else {
            (Arc::from(""), 0)
        };
        self.tools = match self.config.tools.clone() {
            Some(keys) => Some(Arc::new(crate::tools::make(
                &keys,
                &self.composer,
                &mut self.rng,
            )?)),
            None => None,
        };
        self.index = 0;
        Ok(())
    }

    /// The prefixes: none without `prefix_tokens`; one shared prefix; or `prefix_count`
    /// distinct ones, prefix `k` starting with the words `perm[k mod n]`, `perm[k / n mod n]`
    /// reversed against the prompts' own starts, so that prefixes differ from their first
    /// token (for up to `n` of them) and from their second (up to `n²`).
    fn make_prefixes(&mut self) -> Result<Vec<(String, u32)>, Error> {
        let p = self.config.prefix_tokens;
        if p == 0 {
            return Ok(vec![(String::new(), 0)]);
        }
        let count = self.config.prefix_count.max(1);
        if count == 1 {
            let text = self.composer.compose("", 0, &[], p, &mut self.rng)?;
            return Ok(vec![(text, p)]);
        }
        let n = self.perm.len().max(1);
        (0..count as usize)
            .map(|k| {
                let first = [self.perm[n - 1 - k % n], self.perm[(k / n) % n]];
                let text = self.composer.compose("", 0, &first, p, &mut self.rng)?;
                Ok((text, p))
            })
            .collect()
    }

    /// Whether the configuration asks for sessions (`turns`).
    pub(crate) fn sessions(&self) -> bool {
        self.config.turns.is_some()
    }

    /// The next conversation: `turns` user messages of the usual exact lengths (one-turn
    /// conversations without sessions), after the shared system prompt. `samples` counts
    /// conversations.
    pub(crate) fn next_conversation(&mut self) -> Result<Option<ConversationSpec>, Error> {
        let n = self.config.turns.unwrap_or(1);
        let mut turns = Vec::with_capacity(n as usize);
        for _ in 0..n {
            match self.next_spec()? {
                Some(t) => turns.push(t),
                None => return Ok(None),
            }
        }
        Ok(Some(ConversationSpec {
            system: self.system.0.clone(),
            system_tokens: self.system.1,
            turns,
            tools: self.tools.clone(),
        }))
    }

    pub(crate) fn next_spec(&mut self) -> Result<Option<RequestSpec>, Error> {
        let per_sample = u64::from(self.config.turns.unwrap_or(1));
        if self
            .config
            .samples
            .is_some_and(|s| self.index >= s * per_sample)
        {
            return Ok(None);
        }
        let n = self.perm.len() as u64;
        let i = self.index;
        let first = [
            self.perm[(i % n) as usize],
            self.perm[((i / n) % n) as usize],
        ];
        let tokens = self.config.prompt.sample(&mut self.rng).max(1);
        let output = self.config.output.map(|d| d.sample(&mut self.rng).max(1));
        let (prefix, prefix_tokens) = &self.prefixes[(i % self.prefixes.len() as u64) as usize];
        let prompt =
            self.composer
                .compose(prefix, *prefix_tokens, &first, tokens, &mut self.rng)?;
        self.index += 1;
        Ok(Some(RequestSpec {
            prompt: prompt.into(),
            prompt_tokens: prefix_tokens + tokens,
            output_tokens: output,
            at: None,
            batch: Vec::new(),
            images: Vec::new(),
        }))
    }
}
