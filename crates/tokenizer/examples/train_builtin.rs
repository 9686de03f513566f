//! Rebuilds `crates/tokenizer/assets/builtin-tokenizer.json`, the tokenizer bench ships inside
//! its binary: a byte-level BPE trained on text this project generates.
//!
//! `cargo run --release -p bench-tokenizer --example train_builtin [OUTPUT]`

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/builtin-tokenizer.json")
        });
    let json = bench_tokenizer::train::train_builtin()?;
    std::fs::write(&out, json)?;
    eprintln!("wrote {}", out.display());
    Ok(())
}
