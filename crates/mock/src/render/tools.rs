//! Chat answers that call a tool (docs/simulator.md, "Tool calls"): the answer's output tokens
//! are the call's `arguments` (the same words a text answer would carry), its finish reason
//! `tool_calls`. Streamed as vLLM streams a tool call: the first event names the call (`id`,
//! `type`, `function.name`, empty `arguments`) with the first token's piece; every later event
//! carries one step's piece of `function.arguments`; the last has `finish_reason:
//! "tool_calls"`; then the usage event when asked for, and `[DONE]`.

use bytes::Bytes;

use super::{
    event_head, frame_plan, push_hex, push_text, push_u64, push_usage, Ctx, Oai, Pieces, Rendered,
    DONE,
};
use crate::faults::FaultPlan;

/// The call's id: `call_` and the request id in hex.
fn push_call_id(b: &mut Vec<u8>, ctx: &Ctx<'_>) {
    b.extend_from_slice(b"call_");
    push_hex(b, ctx.id);
}

/// One event of tool-call tokens `range`; the first names the call.
fn push_piece(
    b: &mut Vec<u8>,
    head: &mut usize,
    ctx: &Ctx<'_>,
    name: &str,
    range: std::ops::Range<u32>,
) {
    event_head(b, head, Oai::Chat, ctx);
    b.extend_from_slice(b"\"choices\":[{\"index\":0,\"delta\":{");
    if range.start == 0 {
        b.extend_from_slice(b"\"role\":\"assistant\",\"content\":null,");
    }
    b.extend_from_slice(b"\"tool_calls\":[{\"index\":0,");
    if range.start == 0 {
        b.extend_from_slice(b"\"id\":\"");
        push_call_id(b, ctx);
        b.extend_from_slice(b"\",\"type\":\"function\",\"function\":{\"name\":\"");
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(b"\",");
    } else {
        b.extend_from_slice(b"\"function\":{");
    }
    b.extend_from_slice(b"\"arguments\":\"");
    push_text(b, ctx, range.clone());
    b.extend_from_slice(b"\"}}]},\"logprobs\":null,\"finish_reason\":");
    if range.end == ctx.tokens {
        b.extend_from_slice(b"\"tool_calls\"");
    } else {
        b.extend_from_slice(b"null");
    }
    b.extend_from_slice(b"}]}\n\n");
}

/// A streamed chat answer calling tool `name` (JSON-escaped), one frame per token (or one
/// frame when `frames` is off and no fault touches the stream).
pub(crate) fn tool_stream(
    ctx: &Ctx<'_>,
    name: &str,
    include_usage: bool,
    plan: &FaultPlan,
    frames: bool,
) -> Rendered {
    let (rendered, stop, error_event) = frame_plan(ctx, plan);
    let frames = frames || plan.touches_stream();
    let mut b: Vec<u8> = Vec::with_capacity(200 * (ctx.tokens as usize + 3));
    let mut ends = Vec::with_capacity(if frames { rendered as usize + 1 } else { 0 });
    let (mut steps, mut from, mut head) = (ctx.steps(), 0, 0);
    let mut cached_slot = None;
    for i in 0..rendered {
        // A step's tokens go out together, in its last token's frame.
        if steps.ends_step(i) || i + 1 == rendered {
            push_piece(&mut b, &mut head, ctx, name, from..i + 1);
            from = i + 1;
        }
        if i + 1 == ctx.tokens {
            if include_usage {
                event_head(&mut b, &mut head, Oai::Chat, ctx);
                b.extend_from_slice(b"\"choices\":[],\"usage\":");
                cached_slot = push_usage(&mut b, ctx.prompt_tokens, ctx.tokens, 0, ctx.cached);
                b.extend_from_slice(b"}\n\n");
            }
            b.extend_from_slice(DONE);
        }
        if frames {
            ends.push(b.len() as u32);
        }
    }
    if error_event {
        b.extend_from_slice(
            b"data: {\"error\":{\"message\":\"simulated fault: the engine failed after ",
        );
        push_u64(&mut b, u64::from(rendered));
        b.extend_from_slice(
            b" tokens\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}\n\n",
        );
        b.extend_from_slice(DONE);
        ends.push(b.len() as u32);
    }
    Rendered {
        data: Pieces::from(Bytes::from(b)),
        ends,
        token_frames: rendered,
        stop,
        cached_slot,
    }
}

/// A non-streamed chat answer calling tool `name` (JSON-escaped).
pub(crate) fn tool_full(ctx: &Ctx<'_>, name: &str) -> Bytes {
    let mut b: Vec<u8> = Vec::with_capacity(ctx.tokens as usize * 12 + 400);
    b.extend_from_slice(b"{\"id\":\"chatcmpl-");
    push_hex(&mut b, ctx.id);
    b.extend_from_slice(b"\",\"object\":\"chat.completion\",\"created\":");
    push_u64(&mut b, ctx.created);
    b.extend_from_slice(b",\"model\":\"");
    b.extend_from_slice(ctx.model.as_bytes());
    b.extend_from_slice(
        b"\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"",
    );
    push_call_id(&mut b, ctx);
    b.extend_from_slice(b"\",\"type\":\"function\",\"function\":{\"name\":\"");
    b.extend_from_slice(name.as_bytes());
    b.extend_from_slice(b"\",\"arguments\":\"");
    push_text(&mut b, ctx, 0..ctx.tokens);
    b.extend_from_slice(b"\"}}]},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}],\"usage\":");
    push_usage(&mut b, ctx.prompt_tokens, ctx.tokens, 0, ctx.cached);
    b.push(b'}');
    Bytes::from(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{CachedUsage, Words};

    fn ctx(words: &Words, tokens: u32) -> Ctx<'_> {
        Ctx {
            id: 7,
            created: 1,
            model: "m",
            words,
            word_start: 0,
            tokens,
            finish_length: false,
            prompt_tokens: 9,
            reasoning: 0,
            cached: CachedUsage::Omit,
            drafts: None,
        }
    }

    #[test]
    fn a_streamed_call_carries_its_id_name_and_arguments() {
        let words = Words::new(vec![(" river".into(), 1), (" stone".into(), 2)]);
        let r = tool_stream(&ctx(&words, 3), "search", true, &FaultPlan::default(), true);
        assert_eq!(r.ends.len(), 3);
        let text = String::from_utf8(r.data.to_vec()).expect("utf8");
        let events: Vec<serde_json::Value> = text
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str(e).expect("json"))
            .collect();
        assert_eq!(events.len(), 4, "{text}");
        let call = &events[0]["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["id"], "call_0000000000000007");
        assert_eq!(call["function"]["name"], "search");
        let args: String = events[..3]
            .iter()
            .map(|e| {
                e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .expect("arguments")
                    .to_string()
            })
            .collect();
        assert_eq!(args, " river stone river");
        assert_eq!(events[2]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(events[3]["usage"]["completion_tokens"], 3);
        let full: serde_json::Value =
            serde_json::from_slice(&tool_full(&ctx(&words, 2), "search")).expect("json");
        let m = &full["choices"][0]["message"];
        assert_eq!(m["tool_calls"][0]["function"]["arguments"], " river stone");
        assert_eq!(full["choices"][0]["finish_reason"], "tool_calls");
    }
}
