//! `<think>` tags in answer text (`--think-tags`, docs/backends.md "Reasoning"): a reasoning
//! model served without a reasoning parser sends its thinking inside `content`, between
//! `<think>` and `</think>`. The one rule that splits such text into reasoning and answer.
//!
//! Each tag must arrive within one piece of text (they are single tokens in the models that
//! use them) and unescaped. Whitespace next to a tag (the `\n\n` after `</think>`) is neither
//! reasoning nor answer, so it never ends TTFO.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// The tag state of one response.
#[derive(Debug, Default)]
pub(crate) struct ThinkTags {
    /// Inside `<think>...`, waiting for `</think>`.
    inside: bool,
    /// A `<think>` or a `</think>` was seen: a later `</think>` without an opening tag is
    /// answer text, not the close of an implicit block.
    seen_tag: bool,
    /// Decoded text of the piece being read (kept between events: no allocation per event).
    pub(crate) scratch: String,
}

/// What one piece of answer text held.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split {
    /// Some of it (a tag, or text inside a think block) was reasoning.
    pub(crate) reasoning: bool,
    /// Some non-whitespace text outside any think block.
    pub(crate) answer: bool,
    /// It closed a think block that was never opened: everything before it in the response
    /// was reasoning (templates that put `<think>` in the prompt).
    pub(crate) closed_unopened: bool,
}

impl ThinkTags {
    /// Splits `text` at its tags, appending its reasoning parts to `reasoning` when given.
    pub(crate) fn split(&mut self, text: &str, mut reasoning: Option<&mut String>) -> Split {
        let mut out = Split::default();
        let mut push = |s: &str| {
            if let Some(r) = reasoning.as_deref_mut() {
                r.push_str(s);
            }
        };
        let mut rest = text;
        loop {
            if self.inside {
                out.reasoning = true;
                let Some(k) = rest.find(CLOSE) else {
                    push(rest);
                    break;
                };
                push(rest.get(..k).unwrap_or(""));
                self.inside = false;
                rest = rest.get(k + CLOSE.len()..).unwrap_or("");
                continue;
            }
            let open = rest.find(OPEN);
            let close = if self.seen_tag {
                None
            } else {
                rest.find(CLOSE)
            };
            match (open, close) {
                (o, Some(c)) if o.is_none_or(|o| c < o) => {
                    out.reasoning = true;
                    out.closed_unopened = true;
                    self.seen_tag = true;
                    push(rest.get(..c).unwrap_or(""));
                    rest = rest.get(c + CLOSE.len()..).unwrap_or("");
                }
                (Some(o), _) => {
                    out.answer |= !rest.get(..o).unwrap_or("").trim().is_empty();
                    out.reasoning = true;
                    self.inside = true;
                    self.seen_tag = true;
                    rest = rest.get(o + OPEN.len()..).unwrap_or("");
                }
                _ => {
                    out.answer |= !rest.trim().is_empty();
                    break;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pieces: &[&str]) -> (Vec<Split>, String) {
        let mut t = ThinkTags::default();
        let mut r = String::new();
        let v = pieces.iter().map(|p| t.split(p, Some(&mut r))).collect();
        (v, r)
    }

    const R: Split = Split {
        reasoning: true,
        answer: false,
        closed_unopened: false,
    };
    const A: Split = Split {
        reasoning: false,
        answer: true,
        closed_unopened: false,
    };
    const NONE: Split = Split {
        reasoning: false,
        answer: false,
        closed_unopened: false,
    };

    #[test]
    fn a_think_block_then_the_answer() {
        let (v, r) = run(&[
            "<think>", "\nhmm", " so", "</think>", "\n\n", "Hi", " there",
        ]);
        assert_eq!(v, [R, R, R, R, NONE, A, A]);
        assert_eq!(r, "\nhmm so");
    }

    #[test]
    fn tags_and_text_in_one_piece() {
        let (v, r) = run(&["<think>a</think>b"]);
        assert_eq!(
            v,
            [Split {
                reasoning: true,
                answer: true,
                closed_unopened: false
            }]
        );
        assert_eq!(r, "a");
    }

    #[test]
    fn a_close_without_an_open_makes_the_start_reasoning() {
        let (v, r) = run(&["hmm", " ok", "</think>\n\n", "Hi", "</think>"]);
        assert_eq!(v[..2], [A, A], "not known yet");
        assert_eq!(
            v[2],
            Split {
                reasoning: true,
                answer: false,
                closed_unopened: true
            }
        );
        // A later close is answer text.
        assert_eq!(v[3..], [A, A]);
        assert_eq!(r, "");
    }

    #[test]
    fn text_without_tags_is_all_answer() {
        let (v, _) = run(&["Hello", " world", " "]);
        assert_eq!(v, [A, A, NONE]);
    }
}
