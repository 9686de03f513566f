//! Text lines as every file bench reads takes them: the next line without its ending, and
//! what a line that is not UTF-8 says (its first bad byte and column). Below the file and
//! trace readers, which both read lines.

use std::io::BufRead;

/// What is wrong with a line that is not UTF-8: the first bad byte and its column (from 1),
/// as every file bench reads says it.
pub(crate) fn not_utf8(line: &[u8], e: &std::str::Utf8Error) -> String {
    let at = e.valid_up_to();
    let byte = line.get(at).copied().unwrap_or_default();
    format!(
        "not UTF-8 text (byte 0x{byte:02x} at column {}); re-encode the file as UTF-8",
        at + 1
    )
}

/// The next line of `r` (without its line ending) as text, `Ok(None)` at the end; a line that
/// is not UTF-8 is an error saying its first bad byte and column (the caller names the line).
pub(crate) fn next_line(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<Result<String, String>>> {
    buf.clear();
    if r.read_until(b'\n', buf)? == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    }
    Ok(Some(match std::str::from_utf8(buf) {
        Ok(t) => Ok(t.to_string()),
        Err(e) => Err(not_utf8(buf, &e)),
    }))
}
