//! Training of the built-in tokenizer (used by `examples/train_builtin.rs` and by the test that
//! checks the shipped file).

use std::collections::HashSet;

use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{
    AddedToken, DecoderWrapper, NormalizerWrapper, PostProcessorWrapper, PreTokenizerWrapper,
    TokenizerBuilder,
};

use crate::corpus::builtin_corpus;
use crate::Error;

/// Seed of the built-in tokenizer's training text.
pub const BUILTIN_CORPUS_SEED: u64 = 0x6265_6e63_6821; // "bench!"
/// Size of the built-in tokenizer's training text, in bytes.
pub const BUILTIN_CORPUS_BYTES: usize = 1 << 20;
/// Vocabulary size of the built-in tokenizer (256 byte tokens, merges, one special token).
pub const BUILTIN_VOCAB_SIZE: usize = 4096;
/// The built-in tokenizer's only special token.
pub const END_OF_TEXT: &str = "<|endoftext|>";

/// Trains a GPT-2 style byte-level BPE of `vocab_size` tokens on `corpus` and returns its
/// `tokenizer.json` text (pretty-printed).
pub fn train_byte_level_bpe(corpus: &str, vocab_size: usize) -> Result<String, Error> {
    let alphabet: HashSet<char> = ByteLevel::alphabet().into_iter().collect();
    let mut trainer = BpeTrainerBuilder::new()
        .show_progress(false)
        .vocab_size(vocab_size)
        .min_frequency(2)
        .initial_alphabet(alphabet)
        .special_tokens(vec![AddedToken::from(END_OF_TEXT.to_string(), true)])
        .build();
    let mut tokenizer = TokenizerBuilder::<
        BPE,
        NormalizerWrapper,
        PreTokenizerWrapper,
        PostProcessorWrapper,
        DecoderWrapper,
    >::default()
    .with_model(BPE::default())
    .with_pre_tokenizer(Some(PreTokenizerWrapper::ByteLevel(ByteLevel::new(
        false, true, true,
    ))))
    .with_post_processor(Some(PostProcessorWrapper::ByteLevel(ByteLevel::new(
        false, true, true,
    ))))
    .with_decoder(Some(DecoderWrapper::ByteLevel(ByteLevel::new(
        false, true, true,
    ))))
    .build()
    .map_err(|e| Error::Train(e.to_string()))?;
    // One training sequence per line, as `train_from_files` would read them.
    tokenizer
        .train(&mut trainer, corpus.split_inclusive('\n'))
        .map_err(|e| Error::Train(e.to_string()))?;
    let mut json = tokenizer
        .to_string(true)
        .map_err(|e| Error::Train(e.to_string()))?;
    json.push('\n');
    Ok(json)
}

/// Rebuilds the built-in tokenizer's `tokenizer.json` from scratch: the project's generated
/// corpus, trained with [`train_byte_level_bpe`]. The shipped asset is this function's output.
pub fn train_builtin() -> Result<String, Error> {
    let corpus = builtin_corpus(BUILTIN_CORPUS_SEED, BUILTIN_CORPUS_BYTES);
    train_byte_level_bpe(&corpus, BUILTIN_VOCAB_SIZE)
}
