//! The output vocabulary: single-token words of the serving tokenizer, chosen so that any run
//! of them, concatenated, tokenizes back to exactly one token per word.

use bench_tokenizer::Tokenizer;

use crate::render::Words;

/// How many words to cycle through.
const MAX_WORDS: usize = 256;

/// Used when the tokenizer offers no single-token words (e.g. SentencePiece vocabularies);
/// counts made by a client are then only approximate, and a warning says so.
const FALLBACK: &[&str] = &[" the", " of", " and", " to", " in", " is", " it", " that"];

/// Picks short single-token words (`" word"`) of `tok`, in a fixed order, and checks that the
/// cycle of them tokenizes to one token per word.
pub(crate) fn choose(tok: &Tokenizer) -> Words {
    let mut cands: Vec<(u32, String)> = tok
        .single_token_words()
        .iter()
        .filter(|(_, w)| w.len() <= 8)
        .cloned()
        .collect();
    cands.sort_by(|a, b| a.1.len().cmp(&b.1.len()).then(a.0.cmp(&b.0)));
    // Skip the very shortest (single letters) for readability, keep a stable choice.
    let mut picked: Vec<(String, u32)> = cands
        .into_iter()
        .filter(|(_, w)| w.len() >= 3)
        .take(MAX_WORDS)
        .map(|(id, w)| (w, id))
        .collect();
    if !picked.is_empty() {
        // Every adjacent pair of the cycle, including the wrap-around, in one string.
        let mut cycle: String = picked.iter().map(|(w, _)| w.as_str()).collect();
        cycle.push_str(&picked[0].0);
        if tok.count(&cycle) == picked.len() + 1 {
            return Words::new(picked);
        }
        // Some pair merges: keep only words that survive next to every other kept word is
        // costly to find; a single repeated word is enough for exact counts.
        picked.truncate(1);
        let w = picked[0].0.repeat(3);
        if tok.count(&w) == 3 {
            tracing::warn!("tokenizer merges across words; output repeats one word");
            return Words::new(picked);
        }
    }
    tracing::warn!(
        "tokenizer has no usable single-token words; clients counting output text will be approximate"
    );
    Words::new(
        FALLBACK
            .iter()
            .map(|w| {
                let ids = tok.encode(w);
                (w.to_string(), ids.first().copied().unwrap_or(0))
            })
            .collect(),
    )
}
