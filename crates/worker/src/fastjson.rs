//! Allocation-free fast path for the per-event JSON of each backend's stream.
//!
//! A small scanner over the event's bytes that extracts exactly what
//! [`crate::stream::StreamState`] needs (text pieces, finish, usage, TGI's token and details)
//! without building anything. It accepts an event only when it is sure that serde_json,
//! deserializing the event into the serde structs of `stream.rs`, would succeed with the same
//! values; for everything else (an error body, a duplicate known key, an escaped key, a known
//! field of an unexpected type, a number that is not a plain `u64`, a lone surrogate, malformed
//! JSON, very deep nesting...) it answers `None` and the caller runs the serde_json path, so the
//! meaning of an event is identical by construction. The rules it mirrors, from serde_json
//! 1.0's `SliceRead` and serde's derive:
//!
//! - whitespace is `' '`, `\t`, `\n`, `\r`; nothing but whitespace may follow the document;
//! - a string read as `str` (known fields and the keys of the known structs) must be valid UTF-8
//!   with its `\u` surrogates paired; an ignored string (anything inside an unknown field) need
//!   only have valid escapes and no control character;
//! - unknown fields are skipped with any valid JSON value, known fields may appear in any order
//!   but only once, and `null` is `None` for every `Option` field (but not for TGI's
//!   `special`, a plain `bool`);
//! - a struct may also be written as a JSON array (positional fields): the fast path leaves that
//!   curiosity to serde_json.
//!
//! Never panics: every byte access is checked.

/// Deepest nesting of an unknown value the scanner skips itself (serde_json's own skip has no
/// limit; deeper values are left to it).
const MAX_SKIP_DEPTH: u32 = 64;

/// Most text pieces kept from one event (one per choice and part; real events carry one).
const MAX_TEXTS: usize = 8;

/// A JSON string read as `str`: its raw bytes between the quotes, checked to be valid UTF-8
/// with valid, paired escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JStr<'a> {
    raw: &'a [u8],
    escaped: bool,
}

impl JStr<'_> {
    /// The decoded string is empty (an escape always decodes to at least one byte).
    pub(crate) fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Appends the decoded string to `out`, with serde_json's unescaping. `None` (with `out`
    /// possibly extended) only if the scanner's checks were wrong, which they are not; the
    /// caller restores `out` and falls back.
    pub(crate) fn push_to(&self, out: &mut String) -> Option<()> {
        let raw = std::str::from_utf8(self.raw).ok()?;
        if !self.escaped {
            out.push_str(raw);
            return Some(());
        }
        let mut rest = raw;
        while let Some(k) = rest.find('\\') {
            out.push_str(rest.get(..k)?);
            let esc = rest.get(k + 1..)?;
            let mut chars = esc.chars();
            let c = chars.next()?;
            let used = match c {
                '"' | '\\' | '/' => {
                    out.push(c);
                    1
                }
                'b' => {
                    out.push('\u{8}');
                    1
                }
                'f' => {
                    out.push('\u{c}');
                    1
                }
                'n' => {
                    out.push('\n');
                    1
                }
                'r' => {
                    out.push('\r');
                    1
                }
                't' => {
                    out.push('\t');
                    1
                }
                'u' => {
                    let n = hex4(esc.as_bytes().get(1..5)?)?;
                    if (0xD800..=0xDBFF).contains(&n) {
                        // The scanner checked that `\uDC00`-`\uDFFF` follows.
                        let lo = esc.as_bytes().get(5..11)?;
                        if lo.first() != Some(&b'\\') || lo.get(1) != Some(&b'u') {
                            return None;
                        }
                        let n2 = hex4(lo.get(2..6)?)?;
                        if !(0xDC00..=0xDFFF).contains(&n2) {
                            return None;
                        }
                        let cp = (((n - 0xD800) << 10) | (n2 - 0xDC00)) + 0x1_0000;
                        out.push(char::from_u32(cp)?);
                        11
                    } else {
                        out.push(char::from_u32(n)?);
                        5
                    }
                }
                _ => return None,
            };
            rest = esc.get(used..)?;
        }
        out.push_str(rest);
        Some(())
    }

    /// Equal to `s` once decoded; `None` when escaped (not worth decoding: the caller falls
    /// back).
    fn plain_eq(&self, s: &str) -> Option<bool> {
        if self.escaped {
            None
        } else {
            Some(self.raw == s.as_bytes())
        }
    }
}

/// The value of four hex digits, as serde_json decodes them.
fn hex4(b: &[u8]) -> Option<u32> {
    let mut n = 0u32;
    for &c in b.get(..4)? {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        n = (n << 4) | u32::from(d);
    }
    Some(n)
}

/// The text pieces of one event, in the order the serde path pushes them, each marked answer
/// or reasoning (a bit per piece: no allocation, two instructions when nothing is reasoning).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Texts<'a> {
    items: [Option<JStr<'a>>; MAX_TEXTS],
    len: usize,
    /// Bit `i` is set when piece `i` is reasoning (`reasoning_content`, `reasoning`).
    reasoning: u8,
}

impl Default for Texts<'_> {
    fn default() -> Self {
        Self {
            items: [None; MAX_TEXTS],
            len: 0,
            reasoning: 0,
        }
    }
}

impl<'a> Texts<'a> {
    /// Keeps `s` if non-empty, as answer text; `None` when full.
    pub(crate) fn push(&mut self, s: Option<JStr<'a>>) -> Option<()> {
        self.push_kind(s, false)
    }

    /// Keeps `s` if non-empty, marked reasoning or answer; `None` when full.
    pub(crate) fn push_kind(&mut self, s: Option<JStr<'a>>, reasoning: bool) -> Option<()> {
        if let Some(s) = s.filter(|s| !s.is_empty()) {
            *self.items.get_mut(self.len)? = Some(s);
            self.reasoning |= u8::from(reasoning) << self.len;
            self.len += 1;
        }
        Some(())
    }

    /// No piece carries text.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Some piece is reasoning.
    #[inline]
    pub(crate) fn any_reasoning(&self) -> bool {
        self.reasoning != 0
    }

    /// Some piece is answer text.
    #[inline]
    pub(crate) fn any_answer(&self) -> bool {
        self.len > self.reasoning.count_ones() as usize
    }

    /// The pieces in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &JStr<'a>> {
        self.items.iter().take(self.len).flatten()
    }

    /// The pieces in order, each with whether it is reasoning.
    pub(crate) fn iter_kinds(&self) -> impl Iterator<Item = (&JStr<'a>, bool)> {
        let mask = self.reasoning;
        self.items
            .iter()
            .take(self.len)
            .enumerate()
            .filter_map(move |(i, p)| p.as_ref().map(|p| (p, mask & (1 << i) != 0)))
    }
}

/// The last scanned OpenAI event that carried exactly one text piece, unescaped, and nothing
/// else (no finish reason, no usage), with where that piece lies in it.
///
/// A server repeats one event shape for every token of a stream: the same id, model, index and
/// nulls, only the text changes. An event whose bytes equal the template's everywhere outside
/// the piece, with a plain string there (no `"`, `\`, control byte, and valid UTF-8), has
/// exactly the template's structure (the string token spans the same place, so every other
/// key and value is the same), hence the same meaning with its own string as the only text. It
/// is then read with two comparisons and a scan of the text instead of a full scan.
#[derive(Debug, Default)]
pub(crate) struct Template {
    event: Vec<u8>,
    start: usize,
    end: usize,
    ok: bool,
    /// The piece is reasoning (its key is the same in every event of the shape).
    reasoning: bool,
}

impl Template {
    /// Whether the template's piece is reasoning text.
    pub(crate) fn reasoning(&self) -> bool {
        self.reasoning
    }

    /// The only text of `data` if it has the template's shape; `None` otherwise (read it in
    /// full). Its kind is [`Template::reasoning`].
    pub(crate) fn read<'a>(&self, data: &'a [u8]) -> Option<JStr<'a>> {
        if !self.ok {
            return None;
        }
        let pre = self.event.get(..self.start)?;
        let suf = self.event.get(self.end..)?;
        let mid_end = data.len().checked_sub(suf.len())?;
        if mid_end <= pre.len() || !data.starts_with(pre) || !data.ends_with(suf) {
            return None;
        }
        let mid = data.get(pre.len()..mid_end)?;
        if mid.iter().any(|&c| c == b'"' || c == b'\\' || c < 0x20) {
            return None;
        }
        if !mid.is_ascii() {
            std::str::from_utf8(mid).ok()?;
        }
        Some(JStr {
            raw: mid,
            escaped: false,
        })
    }

    /// Learns the shape of `data`, which [`openai_into`] read as `ev` (forgets it when `ev` is
    /// not a single plain text piece).
    pub(crate) fn learn(&mut self, data: &[u8], ev: &OpenAiEvent<'_>) {
        self.ok = false;
        if ev.finished
            || ev.prompt_tokens.is_some()
            || ev.completion_tokens.is_some()
            || ev.reasoning_tokens.is_some()
            || ev.cached_tokens.is_some()
            || ev.texts.len != 1
        {
            return;
        }
        let Some(piece) = ev.texts.iter().next() else {
            return;
        };
        if piece.escaped || piece.raw.is_empty() {
            return;
        }
        let start = (piece.raw.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
        let end = start.wrapping_add(piece.raw.len());
        // The piece must be that very range of `data`, between its quotes.
        let inside = data.get(start..end).map(<[u8]>::as_ptr) == Some(piece.raw.as_ptr());
        let quoted =
            start > 0 && data.get(start - 1) == Some(&b'"') && data.get(end) == Some(&b'"');
        if !(inside && quoted) {
            return;
        }
        self.event.clear();
        self.event.extend_from_slice(data);
        self.start = start;
        self.end = end;
        self.reasoning = ev.texts.any_reasoning();
        self.ok = true;
    }
}

/// What an OpenAI completions / chat event means.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct OpenAiEvent<'a> {
    /// Non-empty `text`, `delta.*` and `message.*` pieces of every choice.
    pub(crate) texts: Texts<'a>,
    /// Some choice had a non-null `finish_reason`.
    pub(crate) finished: bool,
    pub(crate) prompt_tokens: Option<u64>,
    pub(crate) completion_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens`.
    pub(crate) reasoning_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub(crate) cached_tokens: Option<u64>,
}

/// TGI's `token` object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TgiToken<'a> {
    pub(crate) text: Option<JStr<'a>>,
    pub(crate) special: bool,
}

/// TGI's `details` object.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TgiDetails {
    pub(crate) generated_tokens: Option<u64>,
    /// Number of entries of `prefill`, when it is an array.
    pub(crate) prefill: Option<usize>,
}

/// What a TGI event means.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TgiEvent<'a> {
    pub(crate) token: Option<TgiToken<'a>>,
    pub(crate) generated_text: Option<JStr<'a>>,
    pub(crate) details: Option<TgiDetails>,
}

/// Reads an OpenAI event; `None` means "ask serde_json".
#[cfg(test)]
pub(crate) fn openai(data: &[u8]) -> Option<OpenAiEvent<'_>> {
    let mut ev = OpenAiEvent::default();
    openai_into(data, &mut ev)?;
    Some(ev)
}

/// Reads an OpenAI event into `ev` (which must be `default()`); `None` means "ask
/// serde_json" (`ev` is then meaningless).
pub(crate) fn openai_into<'a>(data: &'a [u8], ev: &mut OpenAiEvent<'a>) -> Option<()> {
    let mut s = Scanner { b: data, i: 0 };
    s.start_object()?;
    let mut seen = Seen::default();
    s.object_body(|s, key| {
        match key.name {
            b"choices" => {
                seen.first(0)?;
                if !s.null()? {
                    s.array(|s| s.openai_choice(ev))?;
                }
            }
            b"usage" => {
                seen.first(1)?;
                if !s.null()? {
                    s.start_object()?;
                    let mut seen = Seen::default();
                    s.object_body(|s, key| {
                        match key.name {
                            b"prompt_tokens" => {
                                seen.first(0)?;
                                ev.prompt_tokens = s.opt_u64()?;
                            }
                            b"completion_tokens" => {
                                seen.first(1)?;
                                ev.completion_tokens = s.opt_u64()?;
                            }
                            b"completion_tokens_details" => {
                                seen.first(2)?;
                                ev.reasoning_tokens = s.details(b"reasoning_tokens")?;
                            }
                            b"prompt_tokens_details" => {
                                seen.first(3)?;
                                ev.cached_tokens = s.details(b"cached_tokens")?;
                            }
                            _ => s.unknown_field(key)?,
                        }
                        Some(())
                    })?;
                }
            }
            b"error" => {
                seen.first(2)?;
                // An error body is rare: serde_json builds its message.
                if !s.null()? {
                    return None;
                }
            }
            b"object" => {
                seen.first(3)?;
                if let Some(o) = s.opt_str()? {
                    if o.plain_eq("error")? {
                        return None;
                    }
                }
            }
            b"message" => {
                seen.first(4)?;
                s.opt_str()?;
            }
            _ => s.unknown_field(key)?,
        }
        Some(())
    })?;
    s.end()
}

/// Reads a TGI event; `None` means "ask serde_json".
pub(crate) fn tgi(data: &[u8]) -> Option<TgiEvent<'_>> {
    let mut s = Scanner { b: data, i: 0 };
    let mut ev = TgiEvent {
        token: None,
        generated_text: None,
        details: None,
    };
    s.start_object()?;
    let mut seen = Seen::default();
    s.object_body(|s, key| {
        match key.name {
            b"token" => {
                seen.first(0)?;
                if !s.null()? {
                    s.start_object()?;
                    let mut tok = TgiToken {
                        text: None,
                        special: false,
                    };
                    let mut seen = Seen::default();
                    s.object_body(|s, key| {
                        match key.name {
                            b"text" => {
                                seen.first(0)?;
                                tok.text = s.opt_str()?;
                            }
                            b"special" => {
                                seen.first(1)?;
                                tok.special = s.bool()?;
                            }
                            _ => s.unknown_field(key)?,
                        }
                        Some(())
                    })?;
                    ev.token = Some(tok);
                }
            }
            b"generated_text" => {
                seen.first(1)?;
                ev.generated_text = s.opt_str()?;
            }
            b"details" => {
                seen.first(2)?;
                if !s.null()? {
                    s.start_object()?;
                    let mut d = TgiDetails::default();
                    let mut seen = Seen::default();
                    s.object_body(|s, key| {
                        match key.name {
                            b"generated_tokens" => {
                                seen.first(0)?;
                                d.generated_tokens = s.opt_u64()?;
                            }
                            b"prefill" => {
                                seen.first(1)?;
                                if !s.null()? {
                                    let mut n = 0usize;
                                    s.array(|s| {
                                        n += 1;
                                        s.skip_value(0)
                                    })?;
                                    d.prefill = Some(n);
                                }
                            }
                            _ => s.unknown_field(key)?,
                        }
                        Some(())
                    })?;
                    ev.details = Some(d);
                }
            }
            b"error" => {
                seen.first(3)?;
                if !s.null()? {
                    return None;
                }
            }
            _ => s.unknown_field(key)?,
        }
        Some(())
    })?;
    s.end()?;
    Some(ev)
}

/// Known fields of one struct seen so far (serde's derive rejects a duplicate).
#[derive(Default)]
struct Seen(u8);

impl Seen {
    fn first(&mut self, bit: u8) -> Option<()> {
        let m = 1u8 << bit;
        if self.0 & m != 0 {
            return None;
        }
        self.0 |= m;
        Some(())
    }
}

const ONES: u64 = u64::from_le_bytes([1; 8]);
const HIGHS: u64 = ONES << 7;

/// An object key without escapes, and whether it is all ASCII.
#[derive(Clone, Copy)]
struct Key<'a> {
    name: &'a [u8],
    ascii: bool,
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skips JSON whitespace. Compact JSON (the usual case) costs one comparison.
    #[inline(always)]
    fn ws(&mut self) {
        if self.peek().is_some_and(|c| c > b' ') {
            return;
        }
        self.ws_slow();
    }

    #[inline(never)]
    fn ws_slow(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Skips whitespace and eats `c`.
    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        if self.peek()? == c {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    /// Only whitespace is left.
    #[inline]
    fn end(&mut self) -> Option<()> {
        self.ws();
        (self.i == self.b.len()).then_some(())
    }

    #[inline]
    fn literal(&mut self, lit: &[u8]) -> Option<()> {
        let end = self.i.checked_add(lit.len())?;
        if self.b.get(self.i..end)? == lit {
            self.i = end;
            Some(())
        } else {
            None
        }
    }

    /// A `null` (eaten, `true`) or the start of another value (not eaten, `false`).
    #[inline]
    fn null(&mut self) -> Option<bool> {
        self.ws();
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            Some(true)
        } else {
            Some(false)
        }
    }

    #[inline]
    fn start_object(&mut self) -> Option<()> {
        self.eat(b'{')
    }

    /// The members of an object whose `{` was eaten, up to its `}`. `f` is called with the
    /// scanner before each value; it must read or skip it.
    fn object_body(&mut self, mut f: impl FnMut(&mut Self, Key<'a>) -> Option<()>) -> Option<()> {
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            self.eat(b'"')?;
            let (name, escaped, ascii) = self.string_raw(true)?;
            if escaped {
                // serde matches unescaped names: rare, not worth it.
                return None;
            }
            self.eat(b':')?;
            // Every value reader skips its leading whitespace.
            f(self, Key { name, ascii })?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The elements of an array, `[` included; `f` must read or skip each element.
    fn array(&mut self, mut f: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        self.ws();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            // Every element reader skips its leading whitespace.
            f(self)?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An unknown field of a known struct: its key is read as `str` (valid UTF-8), its value
    /// skipped.
    #[inline]
    fn unknown_field(&mut self, key: Key<'_>) -> Option<()> {
        if !key.ascii {
            std::str::from_utf8(key.name).ok()?;
        }
        self.skip_value(0)
    }

    /// The first `"`, `\` or control character at or after `from`: its index and value (`None`
    /// at the end of the input), and whether every byte before it is ASCII.
    #[inline(always)]
    fn find_special(&self, from: usize) -> (usize, Option<u8>, bool) {
        let mut i = from;
        let mut high = 0u64;
        while let Some(chunk) = self.b.get(i..i + 8) {
            let Ok(arr) = <[u8; 8]>::try_from(chunk) else {
                break;
            };
            let x = u64::from_le_bytes(arr);
            // Mycroft's zero-byte test, as serde_json does: the lowest flagged byte is exact.
            let ctrl = x.wrapping_sub(ONES * 0x20) & !x;
            let q = x ^ (ONES * u64::from(b'"'));
            let q = q.wrapping_sub(ONES) & !q;
            let bs = x ^ (ONES * u64::from(b'\\'));
            let bs = bs.wrapping_sub(ONES) & !bs;
            let m = (ctrl | q | bs) & HIGHS;
            if m != 0 {
                let tz = m.trailing_zeros();
                // The high bits of the bytes below the flagged one.
                high |= x & ((m & m.wrapping_neg()) - 1) & HIGHS;
                return (
                    i + (tz / 8) as usize,
                    Some((x >> (tz & !7)) as u8),
                    high == 0,
                );
            }
            high |= x & HIGHS;
            i += 8;
        }
        while let Some(&c) = self.b.get(i) {
            if c == b'"' || c == b'\\' || c < 0x20 {
                return (i, Some(c), high == 0);
            }
            high |= u64::from(c & 0x80);
            i += 1;
        }
        (i, None, high == 0)
    }

    /// The raw bytes of a string whose opening quote was eaten, whether it has escapes, and
    /// whether it is all ASCII. `strict` checks `\u` surrogates as serde_json does for a `str`
    /// (paired); otherwise only that four hex digits follow, as serde_json's skip of an
    /// ignored string. UTF-8 is not checked here.
    #[inline(always)]
    fn string_raw(&mut self, strict: bool) -> Option<(&'a [u8], bool, bool)> {
        let start = self.i;
        let mut escaped = false;
        let mut ascii = true;
        loop {
            let (k, c, a) = self.find_special(self.i);
            ascii &= a;
            match c? {
                b'"' => {
                    let raw = self.b.get(start..k)?;
                    self.i = k + 1;
                    return Some((raw, escaped, ascii));
                }
                b'\\' => {
                    escaped = true;
                    self.i = k + 1;
                    self.escape(strict)?;
                }
                _ => return None, // a control character: serde_json rejects it
            }
        }
    }

    /// One escape after its backslash.
    fn escape(&mut self, strict: bool) -> Option<()> {
        match self.peek()? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.i += 1;
                Some(())
            }
            b'u' => {
                let n = hex4(self.b.get(self.i + 1..self.i + 5)?)?;
                self.i += 5;
                if !strict {
                    return Some(());
                }
                if (0xDC00..=0xDFFF).contains(&n) {
                    return None;
                }
                if (0xD800..=0xDBFF).contains(&n) {
                    self.literal(b"\\u")?;
                    let n2 = hex4(self.b.get(self.i..self.i + 4)?)?;
                    self.i += 4;
                    if !(0xDC00..=0xDFFF).contains(&n2) {
                        return None;
                    }
                }
                Some(())
            }
            _ => None,
        }
    }

    /// A string read as `str`, whose opening quote is next.
    #[inline]
    fn str(&mut self) -> Option<JStr<'a>> {
        self.eat(b'"')?;
        let (raw, escaped, ascii) = self.string_raw(true)?;
        if !ascii {
            std::str::from_utf8(raw).ok()?;
        }
        Some(JStr { raw, escaped })
    }

    /// `Option<Cow<str>>`: `null` or a string.
    #[inline]
    fn opt_str(&mut self) -> Option<Option<JStr<'a>>> {
        if self.null()? {
            Some(None)
        } else {
            self.str().map(Some)
        }
    }

    /// `Option<u64>`: `null` or a plain non-negative integer that fits (serde_json reads
    /// anything else as a float or a negative number, which a `u64` refuses or, for `-0`,
    /// accepts: either way, serde's business).
    #[inline]
    fn opt_u64(&mut self) -> Option<Option<u64>> {
        if self.null()? {
            return Some(None);
        }
        let first = self.peek()?;
        if !first.is_ascii_digit() {
            return None;
        }
        self.i += 1;
        let mut n = u64::from(first - b'0');
        if first == b'0' {
            if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return None;
            }
        } else {
            while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
                n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
                self.i += 1;
            }
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        Some(Some(n))
    }

    #[inline]
    fn bool(&mut self) -> Option<bool> {
        self.ws();
        match self.peek()? {
            b't' => self.literal(b"true").map(|()| true),
            b'f' => self.literal(b"false").map(|()| false),
            _ => None,
        }
    }

    #[inline]
    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - start
    }

    /// A number skipped with serde_json's grammar (no range check, as its skip has none).
    fn skip_number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => {
                self.i += 1;
                if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    return None;
                }
            }
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    /// Any JSON value, ignored (strings are not checked for UTF-8, keys are not checked for
    /// duplicates: serde_json's `IgnoredAny` does neither). Leaves inline, containers not.
    #[inline(always)]
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.string_raw(false).map(|_| ())
            }
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => self.skip_other(depth),
        }
    }

    /// [`Self::skip_value`] of an object, an array or a boolean.
    #[inline(never)]
    fn skip_other(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'{' => {
                if depth >= MAX_SKIP_DEPTH {
                    return None;
                }
                self.i += 1;
                self.ws();
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.eat(b'"')?;
                    self.string_raw(false)?;
                    self.eat(b':')?;
                    self.skip_value(depth + 1)?;
                    self.ws();
                    match self.peek()? {
                        b',' => self.i += 1,
                        b'}' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                if depth >= MAX_SKIP_DEPTH {
                    return None;
                }
                self.array(|s| s.skip_value(depth + 1))
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            _ => None,
        }
    }

    /// One element of `choices`: an object (serde also takes an array; not here).
    fn openai_choice(&mut self, ev: &mut OpenAiEvent<'a>) -> Option<()> {
        self.start_object()?;
        let mut text = None;
        let mut delta = [None; 3];
        let mut message = [None; 3];
        let mut seen = Seen::default();
        self.object_body(|s, key| {
            match key.name {
                b"text" => {
                    seen.first(0)?;
                    text = s.opt_str()?;
                }
                b"delta" => {
                    seen.first(1)?;
                    s.delta(&mut delta)?;
                }
                b"message" => {
                    seen.first(2)?;
                    s.delta(&mut message)?;
                }
                b"finish_reason" => {
                    seen.first(3)?;
                    if s.opt_str()?.is_some() {
                        ev.finished = true;
                    }
                }
                _ => s.unknown_field(key)?,
            }
            Some(())
        })?;
        ev.texts.push(text)?;
        for parts in [delta, message] {
            let [reasoning_content, reasoning, content] = parts;
            ev.texts.push_kind(reasoning_content, true)?;
            ev.texts.push_kind(reasoning, true)?;
            ev.texts.push(content)?;
        }
        Some(())
    }

    /// `usage.completion_tokens_details` / `usage.prompt_tokens_details`: `null` or an object
    /// whose `field` (`reasoning_tokens` / `cached_tokens`) is a plain `u64` or `null`, as the
    /// serde structs of `stream.rs` read them.
    fn details(&mut self, field: &[u8]) -> Option<Option<u64>> {
        if self.null()? {
            return Some(None);
        }
        self.start_object()?;
        let mut out = None;
        let mut seen = Seen::default();
        self.object_body(|s, key| {
            if key.name == field {
                seen.first(0)?;
                out = s.opt_u64()?;
            } else {
                s.unknown_field(key)?;
            }
            Some(())
        })?;
        Some(out)
    }

    /// A chat `delta` / `message`: `null` or an object; its parts in the serde path's order
    /// (`reasoning_content`, `reasoning`, `content`).
    fn delta(&mut self, parts: &mut [Option<JStr<'a>>; 3]) -> Option<()> {
        if self.null()? {
            return Some(());
        }
        self.start_object()?;
        let mut seen = Seen::default();
        self.object_body(|s, key| {
            let slot = match key.name {
                b"reasoning_content" => 0,
                b"reasoning" => 1,
                b"content" => 2,
                // `null` or `[]` (vLLM and SGLang send them in every delta) carry no call; a
                // call is rare: the serde path reads it.
                b"tool_calls" => {
                    seen.first(3)?;
                    if !s.null()? {
                        s.array(|_| None)?;
                    }
                    return Some(());
                }
                _ => return s.unknown_field(key),
            };
            seen.first(slot)?;
            *parts.get_mut(usize::from(slot))? = s.opt_str()?;
            Some(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(j: &JStr<'_>) -> String {
        let mut s = String::new();
        j.push_to(&mut s).expect("decodes");
        s
    }

    fn texts(data: &str) -> Option<Vec<String>> {
        openai(data.as_bytes()).map(|e| e.texts.iter().map(decoded).collect())
    }

    #[test]
    fn reads_a_vllm_chat_chunk() {
        let ev = openai(b"{\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":17,\"choices\":[{\"index\":0,\"delta\":{\"content\":\" hi\"},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":18446744073709551615}}")
            .expect("fast path");
        assert_eq!(ev.texts.iter().map(decoded).collect::<Vec<_>>(), [" hi"]);
        assert!(ev.finished);
        assert_eq!(ev.prompt_tokens, Some(3));
        assert_eq!(ev.completion_tokens, Some(u64::MAX));
    }

    #[test]
    fn whitespace_anywhere_is_scanned_not_left_to_serde() {
        let doc = " {\r\n \"choices\" :\t[ { \"text\" : \"a\" ,\n \"delta\" : { \"content\" : \"b\" } } ] ,\"usage\" : { \"prompt_tokens\" : 7 } , \"x\" : [ 1 , { \"y\" : null } ] } \n";
        assert_eq!(texts(doc), Some(vec!["a".into(), "b".into()]));
        let ev = tgi(b"{ \"token\" : { \"text\" : \"t\" , \"special\" : true } , \"details\" : { \"prefill\" : [ 1 , 2 ] } }").expect("fast path");
        assert_eq!(ev.details.and_then(|d| d.prefill), Some(2));
    }

    #[test]
    fn pieces_come_in_the_serde_paths_order() {
        assert_eq!(
            texts("{\"choices\":[{\"delta\":{\"content\":\"c\",\"reasoning\":\"r\",\"reasoning_content\":\"rc\"},\"text\":\"t\"},{\"text\":\"\",\"message\":{\"content\":\"m\"}}]}"),
            Some(vec!["t".into(), "rc".into(), "r".into(), "c".into(), "m".into()])
        );
    }

    #[test]
    fn unescapes_like_serde_json() {
        let s = r#"a\"b\\c\/d\b\f\n\r\t\u00e9\u4e2d\ud83d\ude00\u0000 é"#;
        let doc = format!("{{\"choices\":[{{\"text\":\"{s}\"}}]}}");
        let want: String = serde_json::from_str(&format!("\"{s}\"")).expect("valid");
        assert_eq!(texts(&doc), Some(vec![want]));
    }

    #[test]
    fn leaves_what_it_is_not_sure_about_to_serde() {
        for doc in [
            "{\"error\":{\"message\":\"x\"}}",
            "{\"object\":\"error\",\"message\":\"x\"}",
            "{\"object\":\"e\\u0072ror\"}",
            "{\"choices\":[],\"choices\":[]}",
            "{\"ch\\u006fices\":[]}",
            "{\"choices\":[[\"t\"]]}",
            "{\"choices\":[{\"text\":\"\\ud800\"}]}",
            "{\"choices\":[{\"text\":\"\\udc00\"}]}",
            "{\"usage\":{\"prompt_tokens\":-0}}",
            "{\"usage\":{\"prompt_tokens\":1.0}}",
            "{\"usage\":{\"prompt_tokens\":18446744073709551616}}",
            "{\"usage\":{\"prompt_tokens\":01}}",
            "{\"choices\":[],}",
            "{\"choices\":[]} x",
            "{\"x\":\"\t\"}",
            "{\"x\":1e}",
            "{\"choices\":[{\"text\":\"\\x\"}]}",
            "[]",
        ] {
            assert!(openai(doc.as_bytes()).is_none(), "{doc}");
        }
        for doc in [
            "{\"token\":{\"special\":null}}",
            "{\"details\":{\"prefill\":{}}}",
            "{\"error\":\"x\"}",
        ] {
            assert!(tgi(doc.as_bytes()).is_none(), "{doc}");
        }
    }

    #[test]
    fn unknown_values_are_skipped_as_serde_json_skips_them() {
        // Lone surrogates, invalid UTF-8 and huge numbers are fine inside ignored values.
        let doc = b"{\"x\":[\"\\ud800\",\"\xff\",1e999,-0.5E+3,{\"a\":{\"a\":[]}},true,false,null],\"choices\":null}";
        assert!(serde_json::from_slice::<serde::de::IgnoredAny>(doc).is_ok());
        assert!(openai(doc).is_some());
    }

    #[test]
    fn reads_tgi_events() {
        let ev = tgi(b"{\"index\":2,\"token\":{\"id\":2,\"text\":\"</s>\",\"logprob\":-0.2,\"special\":true},\"generated_text\":\" Hello\",\"details\":{\"finish_reason\":\"eos_token\",\"generated_tokens\":2,\"prefill\":[{\"id\":1},{\"id\":2}],\"seed\":null}}")
            .expect("fast path");
        let tok = ev.token.expect("token");
        assert!(tok.special);
        assert_eq!(tok.text.as_ref().map(decoded).as_deref(), Some("</s>"));
        assert_eq!(
            ev.generated_text.as_ref().map(decoded).as_deref(),
            Some(" Hello")
        );
        let d = ev.details.expect("details");
        assert_eq!((d.generated_tokens, d.prefill), (Some(2), Some(2)));
    }

    #[test]
    fn finds_specials_in_every_lane() {
        for pos in 0..20 {
            for c in [b'"', b'\\', 0x1f, 0] {
                let mut b = vec![b'a'; 20];
                b[pos] = c;
                let s = Scanner { b: &b, i: 0 };
                assert_eq!(s.find_special(0), (pos, Some(c), true));
            }
        }
        let b = [0x80u8, 0xff, 0x20, 0x7f, 0xa0, 0x9f, 0x5b, 0x5d, 0x21];
        assert_eq!(
            Scanner { b: &b, i: 0 }.find_special(0),
            (b.len(), None, false)
        );
        for n in 1..20 {
            for at in 0..n {
                let mut b = vec![b'a'; n];
                b.push(b'"');
                b.push(0xc3);
                assert_eq!(
                    Scanner { b: &b, i: 0 }.find_special(0),
                    (n, Some(b'"'), true)
                );
                b[at] = 0xc3;
                assert_eq!(
                    Scanner { b: &b, i: 0 }.find_special(0),
                    (n, Some(b'"'), false)
                );
            }
        }
    }

    #[test]
    fn nesting_deeper_than_the_skip_limit_is_left_to_serde() {
        let deep = format!("{{\"x\":{}{}}}", "[".repeat(100), "]".repeat(100));
        assert!(openai(deep.as_bytes()).is_none());
        let ok = format!("{{\"x\":{}{}}}", "[".repeat(10), "]".repeat(10));
        assert!(openai(ok.as_bytes()).is_some());
    }
}
