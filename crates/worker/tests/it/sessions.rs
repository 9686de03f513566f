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
