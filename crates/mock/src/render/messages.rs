//! Anthropic's `/v1/messages` bodies: the streamed events, the non-streamed message object and
//! the error body (docs/simulator.md, "API").
//!
//! Streamed, with the first token: `message_start` (its usage carries `input_tokens`) and the
//! first block's `content_block_start` (a `thinking` block when the answer reasons, else the
//! `text` block); then one `content_block_delta` per token, or per step with speculative
//! decoding (`thinking_delta` for the first `reasoning` tokens, `text_delta` for the rest); where
//! the thinking ends, its `signature_delta` and `content_block_stop` and the text block's
//! `content_block_start`; with the last token, the last block's `content_block_stop`,
//! `message_delta` (stop reason and usage: `input_tokens`, `output_tokens`) and
//! `message_stop`. Every event has an `event:` line naming its type, as Anthropic writes them.
//! The usage has no cache fields: the simulator's prefix cache is reported on the OpenAI APIs.

use bytes::Bytes;

use super::{frame_plan, push_hex, push_text, push_u64, Ctx, Pieces, Rendered};
use crate::faults::FaultPlan;

fn event(b: &mut Vec<u8>, kind: &[u8]) {
    b.extend_from_slice(b"event: ");
    b.extend_from_slice(kind);
    b.extend_from_slice(b"\ndata: {\"type\":\"");
    b.extend_from_slice(kind);
    b.push(b'"');
}

/// The index of the text block: after the thinking block when there is one.
fn text_index(ctx: &Ctx<'_>) -> u64 {
    u64::from(ctx.reasoning > 0)
}

fn stop_reason(ctx: &Ctx<'_>) -> &'static [u8] {
    if ctx.finish_length {
        b"max_tokens"
    } else {
        b"end_turn"
    }
}

/// `"usage":{"input_tokens":P,"output_tokens":N}`.
fn push_usage(b: &mut Vec<u8>, ctx: &Ctx<'_>, output: u32) {
    b.extend_from_slice(b"\"usage\":{\"input_tokens\":");
    push_u64(b, u64::from(ctx.prompt_tokens));
    b.extend_from_slice(b",\"output_tokens\":");
    push_u64(b, u64::from(output));
    b.push(b'}');
}

/// The head of the message object: id, type, role, model.
fn push_message_head(b: &mut Vec<u8>, ctx: &Ctx<'_>) {
    b.extend_from_slice(b"{\"id\":\"msg_");
    push_hex(b, ctx.id);
    b.extend_from_slice(b"\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"");
    b.extend_from_slice(ctx.model.as_bytes());
    b.extend_from_slice(b"\"");
}

fn block_start(b: &mut Vec<u8>, index: u64, thinking: bool) {
    event(b, b"content_block_start");
    b.extend_from_slice(b",\"index\":");
    push_u64(b, index);
    if thinking {
        b.extend_from_slice(b",\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n");
    } else {
        b.extend_from_slice(b",\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
    }
}

fn block_stop(b: &mut Vec<u8>, index: u64) {
    event(b, b"content_block_stop");
    b.extend_from_slice(b",\"index\":");
    push_u64(b, index);
    b.extend_from_slice(b"}\n\n");
}

/// The events written before the first token's.
fn push_start(b: &mut Vec<u8>, ctx: &Ctx<'_>) {
    event(b, b"message_start");
    b.extend_from_slice(b",\"message\":");
    push_message_head(b, ctx);
    b.extend_from_slice(b",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,");
    push_usage(b, ctx, 0);
    b.extend_from_slice(b"}}\n\n");
    block_start(b, 0, ctx.reasoning > 0);
}

/// The events written after the last token's.
fn push_end(b: &mut Vec<u8>, ctx: &Ctx<'_>) {
    let last = if ctx.reasoning >= ctx.tokens {
        0
    } else {
        text_index(ctx)
    };
    block_stop(b, last);
    event(b, b"message_delta");
    b.extend_from_slice(b",\"delta\":{\"stop_reason\":\"");
    b.extend_from_slice(stop_reason(ctx));
    b.extend_from_slice(b"\",\"stop_sequence\":null},");
    push_usage(b, ctx, ctx.tokens);
    b.extend_from_slice(b"}\n\n");
    event(b, b"message_stop");
    b.extend_from_slice(b"}\n\n");
}

/// The delta events of output tokens `range` (one step's): the thinking part, then (where the
/// thinking ends) the switch to the text block, then the text part.
fn push_deltas(b: &mut Vec<u8>, ctx: &Ctx<'_>, range: std::ops::Range<u32>) {
    let r = ctx.reasoning.clamp(range.start, range.end);
    if r > range.start {
        event(b, b"content_block_delta");
        b.extend_from_slice(b",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"");
        push_text(b, ctx, range.start..r);
        b.extend_from_slice(b"\"}}\n\n");
    }
    if r == range.end {
        return;
    }
    if r == ctx.reasoning && ctx.reasoning > 0 {
        // The first answer token: the thinking block ends, the text block begins.
        event(b, b"content_block_delta");
        b.extend_from_slice(
            b",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2lt\"}}\n\n",
        );
        block_stop(b, 0);
        block_start(b, 1, false);
    }
    event(b, b"content_block_delta");
    b.extend_from_slice(b",\"index\":");
    push_u64(b, text_index(ctx));
    b.extend_from_slice(b",\"delta\":{\"type\":\"text_delta\",\"text\":\"");
    push_text(b, ctx, r..range.end);
    b.extend_from_slice(b"\"}}\n\n");
}

const MALFORMED: &[u8] =
    b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":\n\n";

/// A streamed `/v1/messages` answer, one frame per token (or one frame when `frames` is off
/// and no fault touches the stream).
pub(crate) fn messages_stream(ctx: &Ctx<'_>, plan: &FaultPlan, frames: bool) -> Rendered {
    let (rendered, stop, error_event) = frame_plan(ctx, plan);
    let frames = frames || plan.touches_stream();
    let mut b: Vec<u8> = Vec::with_capacity(130 * (ctx.tokens as usize + 6));
    let mut ends = Vec::with_capacity(if frames { rendered as usize + 1 } else { 0 });
    let (mut steps, mut from) = (ctx.steps(), 0);
    for i in 0..rendered {
        if i == 0 {
            if plan.malformed_after == Some(0) {
                b.extend_from_slice(MALFORMED);
            }
            push_start(&mut b, ctx);
        }
        // A step's tokens go out together, in its last token's frame.
        if steps.ends_step(i) || i + 1 == rendered {
            push_deltas(&mut b, ctx, from..i + 1);
            from = i + 1;
        }
        if plan.malformed_after == Some(i + 1) && i + 1 < ctx.tokens {
            b.extend_from_slice(MALFORMED);
        }
        if i + 1 == ctx.tokens {
            push_end(&mut b, ctx);
        }
        if frames {
            ends.push(b.len() as u32);
        }
    }
    if error_event {
        event(&mut b, b"error");
        b.extend_from_slice(
            b",\"error\":{\"type\":\"api_error\",\"message\":\"simulated fault: the engine failed after ",
        );
        push_u64(&mut b, u64::from(rendered));
        b.extend_from_slice(b" tokens\"}}\n\n");
        ends.push(b.len() as u32);
    }
    Rendered {
        data: Pieces::from(Bytes::from(b)),
        ends,
        token_frames: rendered,
        stop,
        cached_slot: None,
    }
}

/// A non-streamed `/v1/messages` answer: the message object, its thinking block (when it
/// reasons) and its text block.
pub(crate) fn messages_full(ctx: &Ctx<'_>) -> Bytes {
    let mut b: Vec<u8> = Vec::with_capacity(ctx.tokens as usize * 12 + 400);
    push_message_head(&mut b, ctx);
    b.extend_from_slice(b",\"content\":[");
    let r = ctx.reasoning.min(ctx.tokens);
    if r > 0 {
        b.extend_from_slice(b"{\"type\":\"thinking\",\"thinking\":\"");
        push_text(&mut b, ctx, 0..r);
        b.extend_from_slice(b"\",\"signature\":\"c2lt\"}");
        if r < ctx.tokens {
            b.push(b',');
        }
    }
    if r < ctx.tokens {
        b.extend_from_slice(b"{\"type\":\"text\",\"text\":\"");
        push_text(&mut b, ctx, r..ctx.tokens);
        b.extend_from_slice(b"\"}");
    }
    b.extend_from_slice(b"],\"stop_reason\":\"");
    b.extend_from_slice(stop_reason(ctx));
    b.extend_from_slice(b"\",\"stop_sequence\":null,");
    push_usage(&mut b, ctx, ctx.tokens);
    b.push(b'}');
    Bytes::from(b)
}

/// An error body in Anthropic's shape: `{"type": "error", "error": {"type", "message"}}`,
/// its type named after the status as Anthropic names it.
pub(crate) fn anthropic_error(status: u16, message: &str) -> Bytes {
    let kind = match status {
        400 | 405 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    };
    let body = serde_json::json!({
        "type": "error",
        "error": {"type": kind, "message": message}
    });
    Bytes::from(body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{CachedUsage, Words};

    fn ctx(words: &Words, tokens: u32, reasoning: u32) -> Ctx<'_> {
        Ctx {
            id: 1,
            created: 0,
            model: "m",
            words,
            word_start: 0,
            tokens,
            finish_length: true,
            prompt_tokens: 9,
            reasoning,
            cached: CachedUsage::Omit,
            drafts: None,
        }
    }

    /// The events' types in order, each frame's apart.
    fn frames(r: &Rendered) -> Vec<Vec<String>> {
        let data: Vec<u8> = {
            let mut p = r.data.clone();
            let mut v = Vec::new();
            while bytes::Buf::has_remaining(&p) {
                let c = bytes::Buf::chunk(&p).to_vec();
                bytes::Buf::advance(&mut p, c.len());
                v.extend(c);
            }
            v
        };
        let mut out = Vec::new();
        let mut at = 0;
        for &end in &r.ends {
            let text = std::str::from_utf8(&data[at..end as usize]).expect("utf-8");
            let kinds = text
                .split("\n\n")
                .filter(|e| !e.is_empty())
                .map(|e| {
                    let data = e.split_once("data: ").expect("data").1;
                    let v: serde_json::Value = serde_json::from_str(data).expect("json");
                    let mut k = v["type"].as_str().expect("type").to_string();
                    if let Some(d) = v["delta"]["type"].as_str() {
                        k = format!("{k}:{d}");
                    }
                    k
                })
                .collect();
            out.push(kinds);
            at = end as usize;
        }
        out
    }

    #[test]
    fn a_reasoning_stream_has_a_thinking_block_then_a_text_block() {
        let words = Words::new(vec![(" a".into(), 1), (" b".into(), 2)]);
        let r = messages_stream(&ctx(&words, 3, 1), &FaultPlan::default(), true);
        assert_eq!(
            frames(&r),
            vec![
                vec![
                    "message_start",
                    "content_block_start",
                    "content_block_delta:thinking_delta"
                ],
                vec![
                    "content_block_delta:signature_delta",
                    "content_block_stop",
                    "content_block_start",
                    "content_block_delta:text_delta"
                ],
                vec![
                    "content_block_delta:text_delta",
                    "content_block_stop",
                    "message_delta",
                    "message_stop"
                ],
            ]
        );
        let full: serde_json::Value =
            serde_json::from_slice(&messages_full(&ctx(&words, 3, 1))).expect("json");
        assert_eq!(full["content"][0]["thinking"], " a");
        assert_eq!(full["content"][1]["text"], " b a");
        assert_eq!(full["stop_reason"], "max_tokens");
        assert_eq!(
            full["usage"],
            serde_json::json!({"input_tokens": 9, "output_tokens": 3})
        );
    }
}
