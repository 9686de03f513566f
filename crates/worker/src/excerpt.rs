//! What a report keeps of a server's bytes: a bounded, lossy-UTF-8 excerpt. Below the stream
//! and pooling readers and the worker, which all quote replies.

/// Longest server-provided message kept in an outcome.
pub(crate) const EXCERPT_BYTES: usize = 512;

/// A bounded, lossy-UTF-8 excerpt of server bytes, its control characters escaped
/// ([`bench_core::escape_controls`]): it is shown on the console and kept in the report.
pub(crate) fn excerpt(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(EXCERPT_BYTES)];
    let mut s = bench_core::escape_controls(&String::from_utf8_lossy(cut)).into_owned();
    if bytes.len() > EXCERPT_BYTES {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_is_bounded_and_lossy() {
        let long = vec![b'x'; 10_000];
        assert!(excerpt(&long).len() <= EXCERPT_BYTES + 3);
        assert_eq!(excerpt(b"\xff ok"), "\u{fffd} ok");
    }
}
