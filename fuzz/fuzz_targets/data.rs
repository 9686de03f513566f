//! Data files of every format and `--data` arguments: arbitrary bytes give requests or an
//! error, never a panic.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn dir() -> &'static std::path::Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("bench-fuzz-data-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, bytes)) = data.split_first() else {
        return;
    };
    if let Ok(arg) = std::str::from_utf8(bytes) {
        let _ = bench_loader::DataSpec::parse(arg, None);
    }
    let ext = ["txt", "jsonl", "json", "csv"][usize::from(kind % 4)];
    let p = dir().join(format!("f.{ext}"));
    if std::fs::write(&p, bytes).is_err() {
        return;
    }
    if let Ok(spec) = bench_loader::DataSpec::parse(&p.display().to_string(), None) {
        if let Ok(l) = bench_loader::Loader::new(spec, bench_tokenizer::Tokenizer::builtin()) {
            for _ in l.cycle(false).take(64) {}
        }
    }
});
