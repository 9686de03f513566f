//! Anthropic's `/v1/messages` request body: the system prompt (a string or text blocks), the
//! messages (each a string or a list of content blocks), `max_tokens` (required, as the API
//! requires it), `stream`, and vLLM's `min_tokens` / `ignore_eos`.
//!
//! Prompt tokens are counted as for chat: the system prompt's text, then every message's text
//! blocks in order, without a chat template. The simulator reads text blocks only: any other
//! block (an image, a tool call) is refused with a 400 naming its type.

use std::borrow::Cow;

use serde::Deserialize;

use super::{Limits, Measure, OpenAiShared, Parsed};

#[derive(Deserialize)]
#[serde(untagged)]
enum Text<'a> {
    Plain(#[serde(borrow)] Cow<'a, str>),
    Blocks(#[serde(borrow)] Vec<Block<'a>>),
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    content: Text<'a>,
}

#[derive(Deserialize)]
pub(super) struct MessagesRequest<'a> {
    #[serde(borrow, default)]
    system: Option<Text<'a>>,
    #[serde(borrow)]
    messages: Vec<Message<'a>>,
    max_tokens: Option<u32>,
    min_tokens: Option<u32>,
    ignore_eos: Option<bool>,
    stream: Option<bool>,
}

/// The tokens of a string or a list of text blocks.
fn text_tokens(t: &Text<'_>, m: &mut Measure<'_>) -> Result<u32, String> {
    match t {
        Text::Plain(s) => Ok(m.text(s)),
        Text::Blocks(blocks) => {
            let mut n = 0u32;
            for b in blocks {
                match (b.kind.as_deref(), &b.text) {
                    (Some("text") | None, Some(t)) => n = n.saturating_add(m.text(t)),
                    (kind, _) => {
                        return Err(format!(
                            "the simulator reads text content blocks only, not `{}`",
                            kind.unwrap_or("(no type)")
                        ))
                    }
                }
            }
            Ok(n)
        }
    }
}

/// `/v1/messages`: the usage always comes with the stream's events (no `stream_options`).
pub(super) fn parse(
    r: MessagesRequest<'_>,
    m: &mut Measure<'_>,
    limits: Limits,
) -> Result<Parsed, String> {
    if r.messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    let Some(max_tokens) = r.max_tokens else {
        return Err("max_tokens: Field required".into());
    };
    let mut prompt_tokens = match &r.system {
        Some(s) => text_tokens(s, m)?,
        None => 0,
    };
    for msg in &r.messages {
        prompt_tokens = prompt_tokens.saturating_add(text_tokens(&msg.content, m)?);
    }
    let shared = OpenAiShared {
        stream: r.stream,
        stream_options: None,
        min_tokens: r.min_tokens,
        ignore_eos: r.ignore_eos,
    };
    let mut p = shared.parsed(prompt_tokens, Some(max_tokens), limits);
    p.include_usage = true;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Api, Limits, PromptCounter};
    use bench_tokenizer::Tokenizer;

    const L: Limits = Limits {
        default_max_tokens: 16,
        max_model_len: 1000,
        prompt_ids: false,
        strict: false,
    };

    #[test]
    fn system_and_messages_count_and_max_tokens_is_required() {
        let tok = &PromptCounter::new(Tokenizer::builtin());
        let n = |s: &str| tok.count(s);
        let body = br#"{"model":"m","system":"be brief","messages":[{"role":"user","content":"hello there"},{"role":"assistant","content":[{"type":"text","text":"hi"}]},{"role":"user","content":"again"}],"max_tokens":7,"stream":true}"#;
        let p = parse(Api::Messages, body, tok, L).expect("parsed");
        assert_eq!(
            p.prompt_tokens,
            n("be brief") + n("hello there") + n("hi") + n("again")
        );
        assert_eq!((p.limit, p.stream, p.include_usage), (7, true, true));
        let blocks = br#"{"system":[{"type":"text","text":"be brief"}],"messages":[{"role":"user","content":"x"}],"max_tokens":1}"#;
        assert_eq!(
            parse(Api::Messages, blocks, tok, L)
                .expect("ok")
                .prompt_tokens,
            n("be brief") + n("x")
        );
        for (bad, says) in [
            (
                &br#"{"messages":[{"role":"user","content":"x"}]}"#[..],
                "max_tokens",
            ),
            (br#"{"messages":[],"max_tokens":3}"#, "messages"),
            (
                br#"{"messages":[{"role":"user","content":[{"type":"image","source":{}}]}],"max_tokens":3}"#,
                "`image`",
            ),
        ] {
            let e = parse(Api::Messages, bad, tok, L).expect_err("refused");
            assert!(e.contains(says), "{e}");
        }
    }
}
