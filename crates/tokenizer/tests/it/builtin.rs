//! The shipped built-in tokenizer is exactly what the project's training code produces, and
//! tokenizer.json files written by the `tokenizers` library load from files and folders.

use bench_tokenizer::{train, Error, Tokenizer, BUILTIN_JSON};

#[test]
fn shipped_builtin_equals_training_output() {
    let trained = train::train_builtin().expect("train");
    assert!(
        trained.as_bytes() == BUILTIN_JSON,
        "assets/builtin-tokenizer.json is stale: rerun \
         `cargo run --release -p bench-tokenizer --example train_builtin`"
    );
}

#[test]
fn loads_files_and_folders_written_by_tokenizers() {
    // A different tokenizer, trained here by the tokenizers library and saved by it.
    let corpus = bench_tokenizer::corpus::builtin_corpus(99, 50_000);
    let json = train::train_byte_level_bpe(&corpus, 600).expect("train");
    let dir = bench_test_support::fresh(env!("CARGO_TARGET_TMPDIR"), "tok-files");
    let file = dir.join("tokenizer.json");
    let tk = tokenizers::Tokenizer::from_bytes(json.as_bytes()).expect("parse");
    tk.save(&file, false).expect("save");

    let by_file = Tokenizer::from_file(&file).expect("file");
    let by_dir = Tokenizer::from_file(&dir).expect("folder");
    let by_resolve = Tokenizer::resolve(dir.to_str().expect("utf8")).expect("resolve");
    assert_eq!(by_file.vocab_size(), 600);
    let text = "The model served 42 requests; latency was 3.5 ms.";
    let ids = by_file.encode(text);
    assert_eq!(ids, tk.encode(text, false).expect("encode").get_ids());
    assert_eq!(by_dir.encode(text), ids);
    assert_eq!(by_resolve.count(text), ids.len());
    assert_eq!(by_file.decode(&ids), text);
    assert_eq!(by_dir.name(), dir.display().to_string());

    // Errors name the culprit.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let e = Tokenizer::from_file(&empty).expect_err("no file");
    assert!(matches!(e, Error::NoTokenizerInFolder(_)));
    assert!(e.to_string().contains("empty"));
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{not json").expect("write");
    let e = Tokenizer::from_file(&bad).expect_err("bad json");
    assert!(e.to_string().contains("bad.json"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
