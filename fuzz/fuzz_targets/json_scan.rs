//! The JSON event scanner (fast path and serde fallback) of every backend, through
//! `StreamRecorder`: arbitrary event data never panics.
#![no_main]

use bench_worker::{BackendKind, StreamRecorder};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let backend = BackendKind::ALL[usize::from(flags % 3)];
    let mut r = StreamRecorder::new(backend, flags & 4 != 0, flags & 8 != 0)
        .with_fast_path(flags & 16 != 0);
    for (i, event) in rest.split(|b| *b == 0).enumerate() {
        let _ = r.on_data(Bytes::copy_from_slice(event), i as u64 * 1_000);
    }
    let _ = r.on_end(u64::MAX / 2);
});
