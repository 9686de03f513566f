//! Arbitrary bytes into every parser of outside input (issue 13): the SSE parser and the JSON
//! event scanner (through `StreamRecorder`, per backend), profile files, `--data` arguments
//! and data files of every format, simulator configs, saved reports. Never a panic. The same
//! targets run unbounded under cargo-fuzz (`fuzz/`); here proptest runs a bounded number of
//! cases (`BENCH_FUZZ_CASES`, default 1,000 per property, a tenth for the ones that write
//! files) so CI stays within its budget.

use crate::common;

use std::io::Write as _;

use bench_worker::sse::SseParser;
use bench_worker::{BackendKind, StreamRecorder};
use bytes::Bytes;
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("BENCH_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Bytes that look like an SSE stream of JSON events often enough to reach deep code.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..512),
        proptest::collection::vec(
            prop_oneof![
                Just(b"data: ".to_vec()),
                Just(b"\n\n".to_vec()),
                Just(b"\r\n".to_vec()),
                Just(b"data: [DONE]\n\n".to_vec()),
                Just(b"{\"choices\":[{\"text\":\"".to_vec()),
                Just(b"{\"choices\":[{\"delta\":{\"content\":\"".to_vec()),
                Just(b"{\"token\":{\"text\":\"".to_vec()),
                Just(b"\"}]}".to_vec()),
                Just(b"{\"usage\":{\"completion_tokens\":".to_vec()),
                Just(b"{\"error\":{\"message\":\"x\"}}".to_vec()),
                Just(b"\\u00".to_vec()),
                Just(b"\xff\xfe".to_vec()),
                Just(b"event: error\n".to_vec()),
                Just(b": comment\n".to_vec()),
                proptest::collection::vec(any::<u8>(), 0..16),
            ],
            0..40
        )
        .prop_map(|parts| parts.concat()),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// The SSE parser under arbitrary bytes cut at arbitrary places: never a panic, and the
    /// same events however the bytes are cut.
    #[test]
    fn sse_parser_never_panics_and_ignores_chunking(bytes in sse_bytes(), cut in 1usize..64) {
        let events = |chunks: Vec<&[u8]>| {
            let mut p = SseParser::with_limit(1 << 16);
            let mut out = Vec::new();
            for c in chunks {
                p.feed(Bytes::copy_from_slice(c));
                loop {
                    match p.next_event() {
                        Ok(Some(e)) => out.push(Ok(e.data.to_vec())),
                        Ok(None) => break,
                        Err(e) => { out.push(Err(e.to_string())); return out; }
                    }
                }
            }
            if let Ok(Some(e)) = p.finish() {
                out.push(Ok(e.data.to_vec()));
            }
            out
        };
        let whole = events(vec![&bytes]);
        let cut_up = events(bytes.chunks(cut).collect());
        prop_assert_eq!(whole, cut_up);
    }

    /// The event scanner (fast path and the serde fallback) of every backend under arbitrary
    /// event data: never a panic, token counts never above what arrived.
    #[test]
    fn stream_recorder_never_panics(
        events in proptest::collection::vec(sse_bytes(), 0..8),
        backend in 0usize..BackendKind::ALL.len(),
        fast in any::<bool>(),
        json_reply in any::<bool>(),
    ) {
        let mut r = StreamRecorder::new(BackendKind::ALL[backend], true, json_reply)
            .with_fast_path(fast);
        for (i, e) in events.into_iter().enumerate() {
            let _ = r.on_data(Bytes::from(e), i as u64 * 1_000);
        }
        let _ = r.on_end(1_000_000);
        let _ = r.usage();
        let _ = r.text();
    }

    /// Profile files: any text is either settings or a clear error, never a panic.
    #[test]
    fn profile_files_never_panic(text in prop_oneof![
        "[a-z_]{1,16}: [-0-9a-z.,\\[\\]\"{} ]{0,24}(\n[a-z_]{1,16}: [-0-9a-z.,\\[\\] ]{0,16}){0,4}",
        any::<String>(),
    ]) {
        let _ = serde_yaml::from_str::<bench_cli::settings::FileSettings>(&text);
    }

    /// `--data` arguments: never a panic.
    #[test]
    fn data_arguments_never_panic(arg in "[a-z_=,.:/0-9-]{0,48}") {
        let _ = bench_loader::DataSpec::parse(&arg, None);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: (cases() / 10).max(20), ..config() })]

    /// Data files of every format with arbitrary content: a clear error or requests, never a
    /// panic, and every request has a prompt.
    #[test]
    fn data_files_never_panic(bytes in sse_bytes(), ext in 0usize..4) {
        let ext = ["txt", "jsonl", "json", "csv"][ext];
        let dir = common::tmp("fuzz", "data");
        let p = dir.join(format!("f.{ext}"));
        std::fs::File::create(&p).and_then(|mut f| f.write_all(&bytes)).expect("write");
        if let Ok(spec) = bench_loader::DataSpec::parse(&p.display().to_string(), None) {
            if let Ok(l) = bench_loader::Loader::new(spec, bench_tokenizer::Tokenizer::builtin()) {
                for s in l.cycle(false).take(64) {
                    prop_assert!(!s.prompt.is_empty() || s.prompt_tokens == 0);
                }
            }
        }
    }

    /// Simulator configs and saved reports: never a panic.
    #[test]
    fn simulator_configs_and_saved_reports_never_panic(bytes in sse_bytes(), json in any::<bool>()) {
        let dir = common::tmp("fuzz", "cfg");
        let p = dir.join(if json { "c.json" } else { "c.yaml" });
        std::fs::write(&p, &bytes).expect("write");
        let _ = bench_mock::MockConfig::from_file(&p);
        let _ = bench_report::read_run(&p);
    }
}
