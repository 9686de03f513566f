//! Prompts that reproduce a trace's prefix sharing exactly.
//!
//! Each hash id names one block of exactly `block_size` words of the [`Composer`] (one token
//! each under the composition proof); a row's prompt is its blocks in order, the last cut to
//! the rest of `input_length` (a prefix of that block's full text). So two prompts are
//! byte-identical exactly as far as their hash ids agree. A block's first two words number it
//! among its *siblings* (the blocks seen after the same parent block, or first in a prompt),
//! in order of first sight: sibling blocks differ from their first token for up to `n`
//! siblings, and within their first two for up to `n²` (`n` the words available: 1,301 for the
//! built-in tokenizer). The other words of a block are drawn from a generator seeded by the
//! run's salt and the hash id: the same within a run, different across runs.

use std::collections::HashMap;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::synthetic::{Composer, Mode};
use crate::Error;

/// Builds the prompts of a trace's rows.
#[derive(Debug)]
pub(crate) struct BlockPrompts {
    composer: Composer,
    block_size: u32,
    salt: u64,
    /// A salted permutation of the words: sibling `k` starts with `perm[k % n]`,
    /// `perm[(k / n) % n]`.
    perm: Vec<usize>,
    /// Hash id -> its rank among its siblings, from its first sight.
    rank: HashMap<u64, u64>,
    /// Parent hash id (`None`: the start of a prompt) -> children seen so far.
    children: HashMap<Option<u64>, u64>,
    /// Names of the rows without hash ids (one fresh block each), counted down from the top so
    /// they never meet a trace's ids.
    fresh: u64,
}

impl BlockPrompts {
    /// Prompt material for blocks of `block_size` tokens, salted with `salt`. Needs a
    /// tokenizer with single-token words (blocks are runs of them).
    pub(crate) fn new(composer: Composer, block_size: u32, salt: u64) -> Result<Self, Error> {
        if composer.mode() == Mode::RandomTokens {
            return Err(Error::Spec(format!(
                "trace replay needs a tokenizer whose vocabulary has single-token words (\" river\"); {} has none",
                composer.tokenizer().name()
            )));
        }
        let mut perm: Vec<usize> = (0..composer.starts()).collect();
        perm.shuffle(&mut rand::rngs::StdRng::seed_from_u64(salt));
        Ok(Self {
            composer,
            block_size: block_size.max(1),
            salt,
            perm,
            rank: HashMap::new(),
            children: HashMap::new(),
            fresh: u64::MAX,
        })
    }

    /// Starts over with another salt: every block gets new words (a new replay pass that must
    /// not meet the prefix cache the previous pass left).
    pub(crate) fn reseed(&mut self, salt: u64) {
        self.salt = salt;
        self.perm.sort_unstable();
        self.perm
            .shuffle(&mut rand::rngs::StdRng::seed_from_u64(salt));
        self.rank.clear();
        self.children.clear();
        self.fresh = u64::MAX;
    }

    /// The prompt of `tokens` tokens in the blocks `hash_ids` (empty: one fresh block of any
    /// length, shared with no other row). `tokens` must fit the blocks (the reader checks it).
    pub(crate) fn prompt(&mut self, tokens: u32, hash_ids: &[u64]) -> Result<String, Error> {
        let fresh;
        let (ids, block) = if hash_ids.is_empty() {
            fresh = [self.fresh];
            self.fresh -= 1;
            (&fresh[..], tokens)
        } else {
            (hash_ids, self.block_size)
        };
        let mut text = String::with_capacity(tokens as usize * 8);
        let mut left = tokens;
        let mut parent = None;
        for &h in ids {
            let n = left.min(block);
            if n == 0 {
                break;
            }
            self.push_block(&mut text, parent, h, n);
            left -= n;
            parent = Some(h);
        }
        if self.composer.mode() == Mode::Checked {
            let counted = self.composer.tokenizer().try_encode(&text)?.len();
            if counted != tokens as usize {
                return Err(Error::Inexact {
                    tokenizer: self.composer.tokenizer().name().to_string(),
                    tokens: u64::from(tokens),
                });
            }
        }
        Ok(text)
    }

    /// Appends the first `n` words of block `h` (child of `parent`).
    fn push_block(&mut self, text: &mut String, parent: Option<u64>, h: u64, n: u32) {
        let k = match self.rank.get(&h) {
            Some(&k) => k,
            None => {
                let c = self.children.entry(parent).or_insert(0);
                let k = *c;
                *c += 1;
                self.rank.insert(h, k);
                k
            }
        };
        let pool = self.perm.len() as u64;
        let words = self.composer.words();
        let mut rng = rand::rngs::StdRng::seed_from_u64(mix(self.salt, h));
        for i in 0..n {
            let w = match i {
                0 => self.perm[(k % pool) as usize],
                1 => self.perm[((k / pool) % pool) as usize],
                _ => rng.random_range(0..words.len()),
            };
            text.push_str(&words[w]);
        }
    }
}

/// A 64-bit mix of the salt and a hash id (SplitMix64's finaliser).
pub(crate) fn mix(salt: u64, h: u64) -> u64 {
    let mut z = salt ^ h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
