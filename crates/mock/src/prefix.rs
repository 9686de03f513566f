//! The prefix cache: an LRU of token blocks, as vLLM's automatic prefix caching keeps them.
//!
//! A token sequence is cut into full blocks of `block_size` tokens (a trailing partial block is
//! never cached); block `i` is named by a hash of block `i - 1`'s name and its own tokens, so a
//! name stands for the whole prefix up to the block's end. A request's hit is the longest run of
//! leading blocks found, and never covers its last prompt token (vLLM recomputes at least one
//! token to produce logits). Found blocks become most recently used; inserting past the capacity
//! evicts the least recently used.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

/// Chained names of the full blocks of `ids`.
pub(crate) fn block_hashes(ids: &[u32], block_size: u32) -> Vec<u64> {
    let bs = block_size.max(1) as usize;
    let mut parent = 0u64;
    ids.chunks_exact(bs)
        .map(|block| {
            let mut h = std::hash::DefaultHasher::new();
            parent.hash(&mut h);
            block.hash(&mut h);
            parent = h.finish();
            parent
        })
        .collect()
}

/// The blocks of one request: the names of its full blocks over prompt and output, and how many
/// of them lie wholly inside the prompt.
#[derive(Debug, Default, Clone)]
pub(crate) struct Blocks {
    /// Chained names over the prompt followed by the output tokens but the last.
    pub hashes: Vec<u64>,
    /// Leading blocks made of prompt tokens only.
    pub in_prompt: usize,
}

/// An LRU set of block names with a capacity in blocks.
#[derive(Debug)]
pub(crate) struct PrefixCache {
    capacity: usize,
    tick: u64,
    /// Name -> last use.
    last_use: HashMap<u64, u64>,
    /// Last use -> name, oldest first.
    by_age: BTreeMap<u64, u64>,
}

impl PrefixCache {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            tick: 0,
            last_use: HashMap::new(),
            by_age: BTreeMap::new(),
        }
    }

    fn touch(&mut self, name: u64) {
        self.tick += 1;
        if let Some(old) = self.last_use.insert(name, self.tick) {
            self.by_age.remove(&old);
        }
        self.by_age.insert(self.tick, name);
    }

    /// The number of leading `blocks` present (at most `limit`); those become most recent.
    pub(crate) fn hits(&mut self, blocks: &[u64], limit: usize) -> usize {
        let n = blocks
            .iter()
            .take(limit)
            .take_while(|b| self.last_use.contains_key(b))
            .count();
        for &b in &blocks[..n] {
            self.touch(b);
        }
        n
    }

    /// Adds `blocks` (most recent last), evicting the least recently used past the capacity.
    pub(crate) fn insert(&mut self, blocks: &[u64]) {
        if self.capacity == 0 {
            return;
        }
        for &b in blocks {
            self.touch(b);
        }
        while self.last_use.len() > self.capacity {
            let Some((_, name)) = self.by_age.pop_first() else {
                break;
            };
            self.last_use.remove(&name);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.last_use.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chained_names_share_prefixes_only() {
        let a = block_hashes(&[1, 2, 3, 4, 5, 6, 7], 2);
        let b = block_hashes(&[1, 2, 3, 4, 9, 9], 2);
        assert_eq!(a.len(), 3, "the trailing partial block is not named");
        assert_eq!(a[..2], b[..2]);
        assert_ne!(a[2], b[2]);
        // Same block content after a different prefix: a different name.
        let c = block_hashes(&[0, 0, 3, 4], 2);
        assert_ne!(a[1], c[1]);
    }

    #[test]
    fn longest_leading_run_and_lru_eviction() {
        let mut c = PrefixCache::new(3);
        let x = block_hashes(&[1, 1, 2, 2, 3, 3], 2);
        let y = block_hashes(&[7, 7, 8, 8], 2);
        c.insert(&x);
        assert_eq!(c.hits(&x, 10), 3);
        assert_eq!(c.hits(&x, 2), 2, "the limit caps the hit");
        // x[0..2] were touched last, so inserting y evicts x[2] then x[0].
        c.insert(&y);
        assert_eq!(c.len(), 3);
        assert_eq!(c.hits(&x, 10), 0, "x[0] was evicted");
        assert_eq!(c.hits(&y, 10), 2);
        let mut off = PrefixCache::new(0);
        off.insert(&x);
        assert_eq!(off.hits(&x, 10), 0);
    }
}
