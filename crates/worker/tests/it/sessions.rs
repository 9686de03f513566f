//! Session turns: the history a turn sends carries the server's own replies verbatim, in the
//! chat messages or flattened for completions and TGI, and its prompt count is the one the
//! simulator logs.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::Arc;

use bench_core::{
    Backend, CancellationToken, Clock, ConversationSpec, Dispatch, Outcome, RequestSpec,
    TurnRequest, FLATTEN_SEPARATOR,
};
use bench_mock::{MockConfig, MockServer};
use bench_worker::{BackendKind, Worker, WorkerConfig};
use common::Script;

fn dispatch(id: u64) -> Dispatch {
    Dispatch {
        id,
        clock: Clock::start(),
        scheduled: 0,
        slot: 0,
    }
}

fn conversation() -> Arc<ConversationSpec> {
    let tk = bench_tokenizer::Tokenizer::builtin();
    let turn = |text: &str, out: u32| RequestSpec {
        prompt: text.into(),
        prompt_tokens: tk.count(text) as u32,
        output_tokens: Some(out),
        at: None,
        batch: Vec::new(),
        images: Vec::new(),
    };
    Arc::new(ConversationSpec {
        system: " you answer briefly".into(),
        system_tokens: tk.count(" you answer briefly") as u32,
        turns: vec![
            turn(" river stone under the bridge", 16),
            turn(" and then what happened", 5),
            turn(" thank you", 3),
        ],
        tools: None,
    })
}

async fn worker(url: String, backend: BackendKind) -> Worker {
    Worker::new(WorkerConfig {
        target: url,
        backend,
        model: Some("m".into()),
        ..WorkerConfig::default()
    })
    .await
    .unwrap()
}

/// Runs every turn of the conversation, feeding each reply into the next turn.
async fn run_session(w: &Worker) -> Vec<(bench_core::RequestRecord, String)> {
    let conv = conversation();
    let mut replies: Vec<(Arc<str>, u32)> = Vec::new();
    let mut out = Vec::new();
    for k in 0..conv.turns.len() {
        let turn = TurnRequest {
            session: 0,
            conversation: conv.clone(),
            replies: replies.clone(),
            calls: Vec::new(),
        };
        let (rec, reply) = w
            .send_turn(turn, dispatch(k as u64), CancellationToken::new())
            .await;
        assert_eq!(rec.outcome, Outcome::Completed);
        let reply = reply.expect("the reply text is kept for sessions").text;
        replies.push((reply.as_str().into(), rec.output_tokens));
        out.push((rec, reply));
    }
    out
}

#[tokio::test]
async fn chat_history_carries_the_replies_and_counts_match_the_simulator() {
    for zero_delay in [true, false] {
        let base = if zero_delay {
            MockConfig::zero_delay()
        } else {
            MockConfig {
                step_base_ms: 1.0,
                ..MockConfig::default()
            }
        };
        chat_history_counts(base).await;
    }
}

async fn chat_history_counts(base: MockConfig) {
    let srv = MockServer::start(MockConfig {
        record_requests: true,
        ..base
    })
    .await
    .unwrap();
    let w = worker(srv.url(), BackendKind::OpenAiChat).await;
    let turns = run_session(&w).await;
    let mut log = srv.request_log();
    for _ in 0..100 {
        if log.len() >= 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        log = srv.request_log();
    }
    srv.shutdown().await;
    let conv = conversation();
    let mut expected = conv.system_tokens;
    for (k, (rec, _)) in turns.iter().enumerate() {
        // Turn k's prompt: system + user messages so far + earlier replies, as the server
        // counted it (and reported in usage).
        expected += conv.turns[k].prompt_tokens;
        assert_eq!(log[k].prompt_tokens, expected, "turn {k}");
        assert_eq!(rec.prompt_tokens, expected, "turn {k}");
        expected += rec.output_tokens;
        assert_eq!(rec.output_tokens, conv.turns[k].output_tokens.unwrap());
    }
}

/// A chat reply streamed in three pieces.
const CHAT_EVENTS: &[&str] = &[
    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":"Sure"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":", \"quoted\"\nline"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":" é"},"finish_reason":"stop"}]}"#,
    "[DONE]",
];

#[tokio::test]
async fn replies_are_resent_verbatim_in_chat_messages_and_flattened_prompts() {
    let reply = "Sure, \"quoted\"\nline é";
    for backend in [BackendKind::OpenAiChat, BackendKind::OpenAiCompletions] {
        let events: Vec<&str> = if backend == BackendKind::OpenAiChat {
            CHAT_EVENTS.to_vec()
        } else {
            vec![
                r#"{"choices":[{"index":0,"text":"Sure"}]}"#,
                r#"{"choices":[{"index":0,"text":", \"quoted\"\nline"}]}"#,
                r#"{"choices":[{"index":0,"text":" é","finish_reason":"stop"}]}"#,
                "[DONE]",
            ]
        };
        let srv = common::start(move |_| Script::sse(&events)).await;
        let w = worker(format!("{}/v1", srv.url()), backend).await;
        let turns = run_session(&w).await;
        assert!(turns.iter().all(|(_, r)| r == reply), "{turns:?}");
        let seen = srv.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 3);
        let body: serde_json::Value = serde_json::from_slice(&seen[2].body).unwrap();
        let conv = conversation();
        if backend == BackendKind::OpenAiChat {
            let msgs: Vec<(String, String)> = body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    (
                        m["role"].as_str().unwrap().to_string(),
                        m["content"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            let want: Vec<(String, String)> = [
                ("system", &*conv.system),
                ("user", &*conv.turns[0].prompt),
                ("assistant", reply),
                ("user", &*conv.turns[1].prompt),
                ("assistant", reply),
                ("user", &*conv.turns[2].prompt),
            ]
            .iter()
            .map(|(r, c)| (r.to_string(), c.to_string()))
            .collect();
            assert_eq!(msgs, want);
            assert_eq!(body["max_completion_tokens"], 3);
        } else {
            let want = [
                &*conv.system,
                &*conv.turns[0].prompt,
                reply,
                &*conv.turns[1].prompt,
                reply,
                &*conv.turns[2].prompt,
            ]
            .join(FLATTEN_SEPARATOR);
            assert_eq!(body["prompt"], want);
        }
    }
}

/// A streamed tool call, as vLLM streams one: the call's id and name first, its arguments in
/// pieces, `finish_reason: "tool_calls"`; then `tool_calls: null` in a text answer's deltas.
const TOOL_CALL_EVENTS: &[&str] = &[
    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_7","type":"function","function":{"name":"look_up","arguments":""}}]}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\": "}}]}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"river\"}"}}]},"finish_reason":"tool_calls"}]}"#,
    "[DONE]",
];

/// The tool-result request of a session with tools, on a capture server: the tools, the
/// assistant's tool call (its id, name and arguments as streamed, `content: null`), and the
/// `role: tool` message naming that id; the session header on every request.
#[tokio::test]
async fn a_tool_call_is_answered_with_the_call_and_its_result_in_openai_chat_shape() {
    let srv = common::start(|seen| {
        if String::from_utf8_lossy(&seen.body).contains("tool_call_id") {
            Script::sse(CHAT_EVENTS)
        } else {
            Script::sse(TOOL_CALL_EVENTS)
        }
    })
    .await;
    let w = Worker::new(WorkerConfig {
        target: format!("{}/v1", srv.url()),
        backend: BackendKind::OpenAiChat,
        model: Some("m".into()),
        session_header: Some("x-session-id".into()),
        ..WorkerConfig::default()
    })
    .await
    .unwrap();
    let def = r#"{"function":{"name":"look_up"},"type":"function"}"#;
    let mut conv = (*conversation()).clone();
    conv.tools = Some(Arc::new(bench_core::Tools {
        definitions: vec![def.into()],
        definition_tokens: 9,
        result: " found it".into(),
        result_tokens: 2,
    }));
    let conv = Arc::new(conv);
    let turn = |calls: Vec<Option<bench_core::ToolCall>>| TurnRequest {
        session: 5,
        conversation: conv.clone(),
        replies: Vec::new(),
        calls,
    };
    let (rec, reply) = w
        .send_turn(turn(Vec::new()), dispatch(0), CancellationToken::new())
        .await;
    assert_eq!(rec.outcome, Outcome::Completed);
    let reply = reply.unwrap();
    assert_eq!(reply.text, r#"{"q": "river"}"#);
    assert_eq!(reply.tool_call, Some(("call_7".into(), "look_up".into())));
    assert_eq!(
        rec.chunks.len(),
        2,
        "the arguments' pieces are the answer's chunks"
    );
    let call = bench_core::ToolCall {
        id: "call_7".into(),
        name: "look_up".into(),
        arguments: reply.text.clone().into(),
        tokens: rec.output_tokens,
    };
    let t = turn(vec![Some(call)]);
    assert_eq!(t.kind(), bench_core::TurnKind::ToolResult);
    let (rec, reply) = w.send_turn(t, dispatch(1), CancellationToken::new()).await;
    assert_eq!(rec.outcome, Outcome::Completed);
    assert_eq!(reply.unwrap().tool_call, None);
    let seen = srv.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for s in &seen {
        assert_eq!(s.headers["x-session-id"], "5");
    }
    let body: serde_json::Value = serde_json::from_slice(&seen[1].body).unwrap();
    assert_eq!(
        body["tools"],
        serde_json::json!([serde_json::from_str::<serde_json::Value>(def).unwrap()])
    );
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4, "{body}");
    assert_eq!(msgs[1]["role"], "user");
    assert_eq!(
        msgs[2],
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_7", "type": "function",
            "function": {"name": "look_up", "arguments": "{\"q\": \"river\"}"}}]})
    );
    assert_eq!(
        msgs[3],
        serde_json::json!({"role": "tool", "tool_call_id": "call_7", "content": " found it"})
    );
}
