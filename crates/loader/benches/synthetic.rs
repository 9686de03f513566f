//! Loader speed: `cargo bench -p bench-loader` (figures in docs/performance.md, "Loader").
//!
//! - `10k_x_5k/*`: 10,000 synthetic prompts of 5,000 tokens generated (the target:
//!   under 5 s), with the built-in and, when installed, the Llama-3 tokenizer.
//! - `128k/*`: one 128,000-token prompt (target: under 1 s).
//! - `reencode_5k/*`: the cost of re-encoding one 5,000-token prompt with the tokenizer, the
//!   per-prompt price the composition proof avoids.
//! - `book_128k/*`: one exact 128,000-token slice of a text file.
//! - `setup/*`: `Composer::new` on a freshly loaded tokenizer (words + proof, once per run).

use std::path::PathBuf;
use std::time::Duration;

use bench_loader::{Composer, DataSpec, Loader};
use bench_tokenizer::Tokenizer;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

fn llama3_path() -> Option<PathBuf> {
    let p = std::env::var_os("BENCH_LLAMA3_TOKENIZER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/test-assets/llama3/tokenizer.json")
        });
    p.is_file().then_some(p)
}

fn tokenizers() -> Vec<(&'static str, Tokenizer)> {
    let mut v = vec![("builtin", Tokenizer::builtin())];
    if let Some(p) = llama3_path() {
        if let Ok(t) = Tokenizer::from_file(&p) {
            v.push(("llama3", t));
        }
    }
    v
}

fn run(spec: &str, tk: &Tokenizer, n: usize) -> usize {
    let spec = DataSpec::parse(spec, None).expect("spec");
    let loader = Loader::new(spec, tk.clone()).expect("loader");
    loader.take(n).map(|s| s.prompt_tokens as usize).sum()
}

fn bench(c: &mut Criterion) {
    let tks = tokenizers();
    for (_, tk) in &tks {
        // Warm the per-tokenizer proof so it is not part of the per-run figure.
        let _ = Composer::new(tk).expect("composer");
    }

    let mut g = c.benchmark_group("10k_x_5k");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    for (name, tk) in &tks {
        g.bench_function(*name, |b| {
            b.iter(|| {
                assert_eq!(
                    run("prompt_tokens=5000,output_tokens=128", tk, 10_000),
                    50_000_000
                )
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("128k");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    for (name, tk) in &tks {
        g.bench_function(*name, |b| {
            b.iter(|| assert_eq!(run("prompt_tokens=128000", tk, 1), 128_000))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("reencode_5k");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, tk) in &tks {
        let prompt = DataSpec::parse("prompt_tokens=5000", None)
            .and_then(|s| Loader::new(s, tk.clone()))
            .expect("loader")
            .next()
            .expect("prompt")
            .prompt;
        g.bench_function(*name, |b| b.iter(|| assert_eq!(tk.count(&prompt), 5000)));
    }
    g.finish();

    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bench-loader-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let book = dir.join("book.txt");
    std::fs::write(&book, bench_tokenizer::corpus::builtin_corpus(5, 3_000_000)).expect("write");
    let mut g = c.benchmark_group("book_128k");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for (name, tk) in &tks {
        let arg = format!("path={},format=book,prompt_tokens=128000", book.display());
        g.bench_function(*name, |b| {
            b.iter(|| {
                let spec = DataSpec::parse(&arg, None).expect("spec");
                let mut l = Loader::new(spec, tk.clone()).expect("loader");
                assert_eq!(l.next().expect("slice").prompt_tokens, 128_000);
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("setup");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("builtin", |b| {
        b.iter_batched(
            || Tokenizer::from_bytes(bench_tokenizer::BUILTIN_JSON, "b").expect("t"),
            |t| Composer::new(&t).expect("c").starts(),
            BatchSize::PerIteration,
        )
    });
    if let Some(p) = llama3_path() {
        g.bench_function("llama3", |b| {
            b.iter_batched(
                || Tokenizer::from_file(&p).expect("t"),
                |t| Composer::new(&t).expect("c").starts(),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
