//! A shard's share of a benchmark ([`Shard`]): the one rule that splits a run across `count`
//! processes. Unit `i` of the single-process run (an arrival, a request of the data, a
//! session, a stream) belongs to shard `i mod count`. The scheduler applies it to arrivals,
//! request counts and concurrency; the CLI applies it to the data; the report merges the
//! shards back (docs/distributed.md).

use serde::{Deserialize, Serialize};

/// Shard `index` of `count` (`0 <= index < count`, `count >= 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shard {
    /// This process's index, from 0.
    pub index: u32,
    /// How many shards share the run.
    pub count: u32,
}

impl Shard {
    /// Shard `index` of `count`; `None` unless `count >= 1` and `index < count`.
    pub fn new(index: u32, count: u32) -> Option<Self> {
        (count >= 1 && index < count).then_some(Self { index, count })
    }

    /// Parses `I/N` (`0/4` .. `3/4`); the message says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not INDEX/COUNT (e.g. 0/4)"))?;
        let i: u32 = i
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: the index `{i}` is not a whole number"))?;
        let n: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: the count `{n}` is not a whole number"))?;
        Self::new(i, n).ok_or_else(|| {
            format!("`{text}`: the index must be below the count, and the count at least 1")
        })
    }

    /// Whether unit `i` of the single-process run is this shard's.
    #[inline]
    pub fn owns(&self, i: u64) -> bool {
        i % u64::from(self.count) == u64::from(self.index)
    }

    /// How many of the units `0..n` are this shard's: `ceil((n - index) / count)`.
    #[inline]
    pub fn share(&self, n: u64) -> u64 {
        let (i, c) = (u64::from(self.index), u64::from(self.count));
        if n <= i {
            0
        } else {
            (n - i).div_ceil(c)
        }
    }

    /// [`Shard::share`] of a 32-bit quantity (streams, caps, burst sizes).
    pub fn share_u32(&self, n: u32) -> u32 {
        // At most `n`, so it fits.
        self.share(u64::from(n)) as u32
    }

    /// Whether this is the only shard (a plain run).
    pub fn is_whole(&self) -> bool {
        self.count == 1
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{prop_assert_eq, proptest};

    #[test]
    fn parse_accepts_index_over_count_and_names_the_fault() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { index: 2, count: 4 }));
        assert!(Shard::parse("4/4")
            .expect_err("refused")
            .contains("below the count"));
        assert!(Shard::parse("0/0").is_err());
        assert!(Shard::parse("x/2").expect_err("refused").contains("`x`"));
        assert!(Shard::parse("3")
            .expect_err("refused")
            .contains("INDEX/COUNT"));
    }

    proptest! {
        /// The shares of every shard add up to the whole and each equals the owned units.
        #[test]
        fn shares_partition_the_units(count in 1u32..20, n in 0u64..500) {
            let mut sum = 0;
            for index in 0..count {
                let s = Shard { index, count };
                let owned = (0..n).filter(|&i| s.owns(i)).count() as u64;
                prop_assert_eq!(s.share(n), owned);
                sum += s.share(n);
            }
            prop_assert_eq!(sum, n);
        }
    }
}
