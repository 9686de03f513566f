//! The SSE parser: arbitrary bytes, cut where the first byte says; never a panic, and the same
//! events however the input is cut.
#![no_main]

use bench_worker::sse::SseParser;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fn events(chunks: &[&[u8]]) -> Vec<Result<Vec<u8>, String>> {
    let mut p = SseParser::with_limit(1 << 16);
    let mut out = Vec::new();
    for c in chunks {
        p.feed(Bytes::copy_from_slice(c));
        loop {
            match p.next_event() {
                Ok(Some(e)) => out.push(Ok(e.data.to_vec())),
                Ok(None) => break,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
    }
    if let Ok(Some(e)) = p.finish() {
        out.push(Ok(e.data.to_vec()));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, bytes)) = data.split_first() else {
        return;
    };
    let cut = usize::from(cut).max(1);
    let whole = events(&[bytes]);
    let pieces: Vec<&[u8]> = bytes.chunks(cut).collect();
    assert_eq!(whole, events(&pieces));
});
