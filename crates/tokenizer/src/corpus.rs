//! The text the built-in tokenizer is trained on: generated here, deterministically, so the
//! shipped `assets/builtin-tokenizer.json` can be rebuilt bit for bit by
//! `cargo run -p bench-tokenizer --example train_builtin`.
//!
//! The text mixes common English words with pseudo-words built from English-like syllables,
//! numbers, punctuation and a little code, in Zipf-like proportions, so the trained merges look
//! like those of a real byte-level BPE (whole frequent words, sub-word pieces for rare ones).

/// A small, fixed PRNG (SplitMix64). Not `rand`: the corpus must not change when a dependency
/// changes its algorithms.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 11) % n as u64) as usize
    }

    /// A Zipf-like index in `0..n`: small indices are much more frequent.
    fn zipf(&mut self, n: usize) -> usize {
        // Inverse-CDF of a 1/x density over [1, n+1): exp(u * ln(n+1)) - 1.
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let x = ((n as f64 + 1.0).ln() * u).exp() - 1.0;
        (x as usize).min(n - 1)
    }
}

const COMMON: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "a",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "she",
    "other",
    "its",
    "may",
    "these",
    "what",
    "them",
    "than",
    "some",
    "him",
    "time",
    "into",
    "only",
    "do",
    "could",
    "new",
    "about",
    "two",
    "first",
    "then",
    "also",
    "after",
    "any",
    "like",
    "our",
    "over",
    "out",
    "such",
    "me",
    "my",
    "most",
    "made",
    "should",
    "people",
    "now",
    "many",
    "between",
    "before",
    "where",
    "through",
    "must",
    "years",
    "way",
    "very",
    "each",
    "work",
    "well",
    "because",
    "those",
    "under",
    "both",
    "even",
    "same",
    "while",
    "how",
    "just",
    "system",
    "model",
    "server",
    "request",
    "token",
    "latency",
    "throughput",
    "memory",
    "data",
    "result",
    "number",
    "value",
    "state",
    "world",
    "water",
    "light",
    "house",
    "river",
    "city",
    "night",
    "morning",
    "question",
    "answer",
    "problem",
    "reason",
    "example",
    "history",
    "language",
    "program",
    "function",
    "network",
    "market",
    "energy",
    "science",
    "music",
    "family",
    "friend",
    "story",
    "paper",
    "letter",
    "window",
    "garden",
    "mountain",
    "ocean",
    "school",
    "student",
    "teacher",
    "doctor",
    "government",
    "country",
    "company",
    "market",
    "little",
    "great",
    "small",
    "large",
    "long",
    "old",
    "young",
    "good",
    "right",
    "high",
    "different",
    "important",
    "possible",
    "general",
    "public",
    "simple",
    "early",
    "late",
    "make",
    "take",
    "give",
    "find",
    "think",
    "know",
    "see",
    "come",
    "look",
    "use",
    "tell",
    "ask",
    "seem",
    "feel",
    "leave",
    "call",
    "keep",
    "begin",
    "show",
    "hear",
    "play",
    "run",
    "move",
    "live",
    "believe",
    "bring",
    "happen",
    "write",
    "provide",
    "stand",
    "lose",
    "pay",
    "meet",
    "include",
    "continue",
    "learn",
    "change",
    "lead",
    "understand",
    "watch",
    "follow",
    "stop",
    "create",
    "speak",
    "read",
    "allow",
    "grow",
    "open",
    "walk",
    "offer",
    "remember",
    "consider",
    "appear",
    "buy",
    "wait",
    "serve",
    "send",
    "expect",
    "build",
    "stay",
    "fall",
    "reach",
    "remain",
    "suggest",
    "raise",
    "pass",
    "sell",
    "require",
    "report",
    "decide",
];

const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "y", "z",
    "br", "cr", "dr", "fl", "gr", "pl", "pr", "st", "str", "th", "sh", "ch", "tr", "sp", "qu",
    "bl", "cl", "sl", "sn", "wh", "",
];
const VOWELS: &[&str] = &[
    "a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "ee", "oo", "ie", "y", "au",
];
const CODAS: &[&str] = &[
    "", "", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "m", "rt", "nt", "ss", "x", "th",
    "ld", "ck",
];
const SUFFIXES: &[&str] = &[
    "", "", "", "", "s", "ed", "ing", "er", "ly", "tion", "ment", "ness", "able", "ist", "ous",
];

fn pseudo_word(rng: &mut SplitMix64) -> String {
    let syllables = 1 + rng.below(3);
    let mut w = String::new();
    for _ in 0..syllables {
        w.push_str(ONSETS[rng.below(ONSETS.len())]);
        w.push_str(VOWELS[rng.below(VOWELS.len())]);
        w.push_str(CODAS[rng.below(CODAS.len())]);
    }
    w.push_str(SUFFIXES[rng.below(SUFFIXES.len())]);
    w
}

fn capitalize(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The built-in tokenizer's training text: about `target_bytes` bytes, identical for a given
/// `seed` on every machine.
pub fn builtin_corpus(seed: u64, target_bytes: usize) -> String {
    let mut rng = SplitMix64::new(seed);
    let lexicon: Vec<String> = (0..6000).map(|_| pseudo_word(&mut rng)).collect();
    let mut out = String::with_capacity(target_bytes + 256);
    while out.len() < target_bytes {
        match rng.below(20) {
            0 => {
                // A line of code.
                let f = &lexicon[rng.zipf(lexicon.len())];
                let a = COMMON[rng.below(COMMON.len())];
                let n = rng.below(1000);
                out.push_str(&format!(
                    "fn {f}_{a}(x: u32) -> u32 {{\n    let {a} = x * {n} + 1;\n    return {a};\n}}\n\n"
                ));
            }
            _ => {
                // A paragraph of sentences.
                let sentences = 1 + rng.below(6);
                for s in 0..sentences {
                    let words = 4 + rng.below(18);
                    for i in 0..words {
                        let word = match rng.below(10) {
                            0..=5 => COMMON[rng.zipf(COMMON.len())].to_string(),
                            6..=8 => lexicon[rng.zipf(lexicon.len())].clone(),
                            _ => match rng.below(4) {
                                0 => format!("{}", rng.below(100)),
                                1 => format!("{}", 1900 + rng.below(130)),
                                2 => format!("{}.{}", rng.below(10), rng.below(100)),
                                _ => format!("{}%", rng.below(101)),
                            },
                        };
                        if i == 0 {
                            if s > 0 {
                                out.push(' ');
                            }
                            out.push_str(&capitalize(&word));
                        } else {
                            out.push(' ');
                            if rng.below(40) == 0 {
                                out.push('"');
                                out.push_str(&word);
                                out.push('"');
                            } else {
                                out.push_str(&word);
                            }
                            if i + 1 < words && rng.below(9) == 0 {
                                out.push(if rng.below(5) == 0 { ';' } else { ',' });
                            }
                        }
                    }
                    out.push(match rng.below(12) {
                        0 => '?',
                        1 => '!',
                        2 => ':',
                        _ => '.',
                    });
                }
                out.push_str(if rng.below(3) == 0 { "\n\n" } else { "\n" });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_is_deterministic_and_sized() {
        let a = builtin_corpus(7, 10_000);
        let b = builtin_corpus(7, 10_000);
        assert_eq!(a, b);
        assert!(a.len() >= 10_000);
        assert_ne!(a, builtin_corpus(8, 10_000));
    }
}
