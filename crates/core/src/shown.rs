//! Text a server wrote, made safe to print: its control characters escaped, so that a reply,
//! a model name or a log line cannot move the cursor, recolour, retitle or clear the user's
//! terminal (`ESC [ 31 m`, an OSC title sequence, a NUL). Every place bench prints or keeps
//! server-provided text for a person to read goes through [`escape_controls`].

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` with every control character but the tab written as an escape: `\x1b` for ESC,
/// `\x00` for NUL, `\x07` for BEL, `\n` and `\r` as `\n` and `\r` (a line of server text stays
/// one line), and C1 controls (U+0080 to U+009F) as `\u{9b}`. Text without any is borrowed
/// as it is.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if is_escaped(c) && (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_escaped(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn is_escaped(c: char) -> bool {
    c.is_control() && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        let hostile = "\u{0}\u{fffd}ok\u{1b}[31mRED\u{1b}]0;pwned\u{7}\u{9b}2J\tend\r\n";
        assert_eq!(
            escape_controls(hostile),
            "\\x00\u{fffd}ok\\x1b[31mRED\\x1b]0;pwned\\x07\\u{9b}2J\tend\\r\\n"
        );
        assert!(matches!(escape_controls("plain text é"), Cow::Borrowed(_)));
        assert!(!escape_controls(hostile)
            .chars()
            .any(|c| c.is_control() && c != '\t'));
    }
}
