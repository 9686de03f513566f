//! `/v1/responses` bodies: the streamed events and the non-streamed response object
//! (docs/simulator.md, "API").
//!
//! Streamed: `response.created` and `response.in_progress` written with the first token, one
//! delta event per token, or per step with speculative decoding (`response.reasoning_text.delta`
//! for the first `reasoning` tokens, `response.output_text.delta` for the rest; a step that
//! crosses from one to the other has one of each), then `response.output_text.done` and
//! `response.completed` (with `usage`) written with the last token. Every event has an
//! `event:` line naming its type, as OpenAI writes them.

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

/// The head of the response object: id, created, model, status.
fn push_object_head(b: &mut Vec<u8>, ctx: &Ctx<'_>, status: &[u8]) {
    b.extend_from_slice(b"{\"id\":\"resp_");
    push_hex(b, ctx.id);
    b.extend_from_slice(b"\",\"object\":\"response\",\"created_at\":");
    push_u64(b, ctx.created);
    b.extend_from_slice(b",\"model\":\"");
    b.extend_from_slice(ctx.model.as_bytes());
    b.extend_from_slice(b"\",\"status\":\"");
    b.extend_from_slice(status);
    b.push(b'"');
}

/// `"usage":{...}` of a response: input, output and reasoning tokens.
fn push_usage(b: &mut Vec<u8>, ctx: &Ctx<'_>) {
    b.extend_from_slice(b",\"usage\":{\"input_tokens\":");
    push_u64(b, u64::from(ctx.prompt_tokens));
    b.extend_from_slice(b",\"output_tokens\":");
    push_u64(b, u64::from(ctx.tokens));
    b.extend_from_slice(b",\"output_tokens_details\":{\"reasoning_tokens\":");
    push_u64(b, u64::from(ctx.reasoning));
    b.extend_from_slice(b"},\"total_tokens\":");
    push_u64(b, u64::from(ctx.prompt_tokens) + u64::from(ctx.tokens));
    b.push(b'}');
}

/// The output items: a reasoning item (when there is reasoning) and the message.
fn push_output(b: &mut Vec<u8>, ctx: &Ctx<'_>) {
    b.extend_from_slice(b",\"output\":[");
    if ctx.reasoning > 0 {
        b.extend_from_slice(
            b"{\"type\":\"reasoning\",\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"",
        );
        push_text(b, ctx, 0..ctx.reasoning);
        b.extend_from_slice(b"\"}]},");
    }
    b.extend_from_slice(
        b"{\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"text\":\"",
    );
    push_text(b, ctx, ctx.reasoning.min(ctx.tokens)..ctx.tokens);
    b.extend_from_slice(b"\"}]}]");
}

fn status(ctx: &Ctx<'_>) -> &'static [u8] {
    if ctx.finish_length {
        b"incomplete"
    } else {
        b"completed"
    }
}

/// The events written before the first token's.
fn push_start(b: &mut Vec<u8>, ctx: &Ctx<'_>) {
    for (kind, st) in [
        (&b"response.created"[..], &b"queued"[..]),
        (b"response.in_progress", b"in_progress"),
    ] {
        event(b, kind);
        b.extend_from_slice(b",\"response\":");
        push_object_head(b, ctx, st);
        b.extend_from_slice(b"}}\n\n");
    }
}

/// The events written after the last token's.
fn push_end(b: &mut Vec<u8>, ctx: &Ctx<'_>) {
    event(b, b"response.output_text.done");
    b.extend_from_slice(b",\"output_index\":0,\"content_index\":0}\n\n");
    event(b, b"response.completed");
    b.extend_from_slice(b",\"response\":");
    push_object_head(b, ctx, status(ctx));
    push_output(b, ctx);
    push_usage(b, ctx);
    b.extend_from_slice(b"}}\n\n");
}

/// The delta events of output tokens `range` (one step's): the reasoning part, then the answer
/// part.
fn push_deltas(b: &mut Vec<u8>, ctx: &Ctx<'_>, range: std::ops::Range<u32>) {
    let r = ctx.reasoning.clamp(range.start, range.end);
    for (part, kind) in [
        (range.start..r, &b"response.reasoning_text.delta"[..]),
        (r..range.end, &b"response.output_text.delta"[..]),
    ] {
        if part.is_empty() {
            continue;
        }
        event(b, kind);
        b.extend_from_slice(b",\"output_index\":0,\"content_index\":0,\"delta\":\"");
        push_text(b, ctx, part);
        b.extend_from_slice(b"\"}\n\n");
    }
}

/// A streamed `/v1/responses` answer, one frame per token (or one frame when `frames` is off
/// and no fault touches the stream).
pub(crate) fn responses_stream(ctx: &Ctx<'_>, plan: &FaultPlan, frames: bool) -> Rendered {
    let (rendered, stop, error_event) = frame_plan(ctx, plan);
    let frames = frames || plan.touches_stream();
    let mut b: Vec<u8> = Vec::with_capacity(150 * (ctx.tokens as usize + 4));
    let mut ends = Vec::with_capacity(if frames { rendered as usize + 1 } else { 0 });
    let (mut steps, mut from) = (ctx.steps(), 0);
    for i in 0..rendered {
        if i == 0 {
            push_start(&mut b, ctx);
        }
        // A step's tokens go out together, in its last token's frame.
        if steps.ends_step(i) || i + 1 == rendered {
            push_deltas(&mut b, ctx, from..i + 1);
            from = i + 1;
        }
        if plan.malformed_after == Some(i + 1) && i + 1 < ctx.tokens {
            b.extend_from_slice(
                b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\n\n",
            );
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
            b",\"code\":\"server_error\",\"message\":\"simulated fault: the engine failed after ",
        );
        push_u64(&mut b, u64::from(rendered));
        b.extend_from_slice(b" tokens\"}\n\n");
        ends.push(b.len() as u32);
    }
    Rendered {
        data: Pieces::from(Bytes::from(b)),
        ends,
        token_frames: rendered,
        stop,
        // The Responses API's usage carries no prompt-token details here.
        cached_slot: None,
    }
}

/// A non-streamed `/v1/responses` answer: the response object.
pub(crate) fn responses_full(ctx: &Ctx<'_>) -> Bytes {
    let mut b: Vec<u8> = Vec::with_capacity(ctx.tokens as usize * 12 + 600);
    push_object_head(&mut b, ctx, status(ctx));
    push_output(&mut b, ctx);
    push_usage(&mut b, ctx);
    b.push(b'}');
    Bytes::from(b)
}
