//! Anthropic's `/v1/messages` (`anthropic-messages`): the exact bodies and headers sent
//! (capture server) for single requests, `--no-stream` and a session's turns; the events read
//! (text and thinking deltas, usage from `message_start` and `message_delta`, unknown types
//! ignored and counted, failures); records against the simulator's closed form and request
//! log: TTFT and every inter-token gap within 1 ms of when it wrote each token.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::Arc;

use bench_core::{
    Backend, CancellationToken, Clock, ConversationSpec, Dispatch, Outcome, ReasoningTokens,
    RequestRecord, RequestSpec, TokenSource, TurnRequest,
};
use bench_mock::{MockConfig, MockServer};
use bench_worker::{BackendKind, Worker, WorkerConfig};
use common::Script;

fn spec(prompt: &str, out: u32) -> RequestSpec {
    common::request(prompt, 2, Some(out))
}

fn config(target: String, stream: bool) -> WorkerConfig {
    WorkerConfig {
        target,
        backend: BackendKind::AnthropicMessages,
        model: Some("m".into()),
        api_key: Some("sk-ant-secret".into()),
        stream,
        ..WorkerConfig::default()
    }
}

fn dispatch(clock: Clock, id: u64) -> Dispatch {
    Dispatch {
        id,
        clock,
        scheduled: clock.now(),
        slot: clock.now(),
    }
}

async fn send(w: &Worker, id: u64, s: RequestSpec) -> RequestRecord {
    w.send(s, dispatch(Clock::start(), id), CancellationToken::new())
        .await
}

/// A stream as Anthropic writes it (thinking, then text), with a ping and one event of a type
/// bench does not know; the usage has prompt-cache fields.
const STREAM: [&str; 12] = [
    r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":5,"cache_read_input_tokens":3,"cache_creation_input_tokens":1,"output_tokens":1}}}"#,
    r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
    r#"{"type":"ping"}"#,
    r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
    r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
    r#"{"type":"content_block_stop","index":0}"#,
    r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
    r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello"}}"#,
    r#"{"type":"shiny_new_event","payload":42}"#,
    r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" world"}}"#,
    r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}"#,
    r#"{"type":"message_stop"}"#,
];

#[tokio::test]
async fn a_stream_is_read_by_event_type_with_the_key_in_x_api_key() {
    let srv = common::start(|_| Script::sse(&STREAM)).await;
    let w = Worker::new(config(srv.url(), true)).await.unwrap();
    let r = send(&w, 0, spec("Say hi", 6)).await;
    assert_eq!(r.outcome, Outcome::Completed);
    let kinds: Vec<bool> = r.chunks.iter().map(|c| c.reasoning).collect();
    assert_eq!(
        kinds,
        [true, false, false],
        "one chunk per text or thinking delta"
    );
    // Anthropic's input_tokens leaves out the cache reads and writes.
    assert_eq!(
        (r.prompt_tokens, r.prompt_tokens_source),
        (9, TokenSource::Usage)
    );
    assert_eq!(r.cached_tokens, Some(3));
    // The final message_delta's count, not message_start's placeholder.
    assert_eq!(
        (r.output_tokens, r.output_tokens_source),
        (6, TokenSource::Usage)
    );
    assert_eq!(
        r.reasoning,
        Some(ReasoningTokens {
            tokens: 1,
            source: TokenSource::Chunks
        })
    );
    assert_eq!(r.first_answer(), Some(r.chunks[1].at));
    assert_eq!(w.ignored_events(), 1, "the unknown event is counted");
    let seen = srv.seen.lock().unwrap().clone();
    assert_eq!(seen[0].path_and_query, "/v1/messages");
    let h = &seen[0].headers;
    assert_eq!(h["x-api-key"], "sk-ant-secret");
    assert_eq!(h["anthropic-version"], "2023-06-01");
    assert!(h.get("authorization").is_none(), "no bearer token");
    let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "Say hi"}],
                           "max_tokens": 6, "stream": true,
                           "ignore_eos": true, "min_tokens": 6})
    );
    assert!(!format!("{w:?}").contains("sk-ant-secret"));
}

#[tokio::test]
async fn failures_and_cut_streams() {
    let err = [
        STREAM[0],
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ];
    let srv = common::start(move |_| Script::sse(&err)).await;
    let w = Worker::new(config(srv.url(), true)).await.unwrap();
    let r = send(&w, 0, spec("x", 3)).await;
    assert_eq!(r.outcome.kind_name(), "stream_error", "{:?}", r.outcome);
    assert!(r.outcome.message().unwrap().contains("Overloaded"));
    // Cut before message_delta: a protocol error; cut after its stop reason: complete.
    for (n, kind) in [(8, "protocol"), (11, "completed")] {
        let srv = common::start(move |_| Script::sse(&STREAM[..n])).await;
        let w = Worker::new(config(srv.url(), true)).await.unwrap();
        assert_eq!(send(&w, 0, spec("x", 3)).await.outcome.kind_name(), kind);
    }
    // An error answer in Anthropic's shape: an http outcome carrying its message.
    let srv = common::start(|_| {
        Script::status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
    })
    .await;
    let w = Worker::new(config(srv.url(), true)).await.unwrap();
    let r = send(&w, 0, spec("x", 3)).await;
    assert_eq!(r.outcome.kind_name(), "http_529", "{:?}", r.outcome);
    assert!(format!("{:?}", r.outcome).contains("Overloaded"));
}

#[tokio::test]
async fn non_streamed_bodies_and_replies() {
    let reply = r#"{"id":"msg_2","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"text","text":"Hi there"}],"stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":6}}"#;
    let srv = common::start(move |_| Script::status(200, reply)).await;
    let w = Worker::new(config(srv.url(), false)).await.unwrap();
    let r = send(&w, 0, spec("Say hi", 6)).await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert!(r.chunks.is_empty(), "no first token to time");
    assert_eq!((r.prompt_tokens, r.output_tokens), (4, 6));
    assert_eq!(r.output_tokens_source, TokenSource::Usage);
    let body: serde_json::Value =
        serde_json::from_slice(&srv.seen.lock().unwrap()[0].body).unwrap();
    assert_eq!(body["stream"], false);
    assert_eq!(body["max_tokens"], 6);
}

/// A session's system prompt goes in `system`, its history in `messages`: every earlier user
/// message and the server's own reply (answer text, not the thinking), then the new message.
#[tokio::test]
async fn session_turns_send_the_system_prompt_apart() {
    let srv = common::start(|_| Script::sse(&STREAM)).await;
    let w = Worker::new(config(srv.url(), true)).await.unwrap();
    let conv = Arc::new(ConversationSpec {
        system: "be brief".into(),
        system_tokens: 2,
        turns: vec![spec("first", 5), spec("second", 5)],
        tools: None,
    });
    let mut replies: Vec<(Arc<str>, u32)> = Vec::new();
    for k in 0..2 {
        let turn = TurnRequest {
            session: 0,
            conversation: conv.clone(),
            replies: replies.clone(),
            calls: Vec::new(),
        };
        let (rec, reply) = w
            .send_turn(turn, dispatch(Clock::start(), k), CancellationToken::new())
            .await;
        assert_eq!(rec.outcome, Outcome::Completed);
        let reply = reply.unwrap().text;
        assert_eq!(reply, "Hello world");
        replies.push((reply.as_str().into(), rec.output_tokens));
    }
    let seen = srv.seen.lock().unwrap().clone();
    let second: serde_json::Value = serde_json::from_slice(&seen[1].body).unwrap();
    assert_eq!(second["system"], "be brief");
    assert_eq!(
        second["messages"],
        serde_json::json!([
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "Hello world"},
            {"role": "user", "content": "second"}
        ])
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Against the simulator with a reasoning phase: the first `R` of `N` chunks are thinking
/// deltas, the tokens and prompt equal its log, and the first token's arrival and every gap
/// between chunks agree with its log of when it wrote each token: median error under 1 ms.
/// Not streamed, the same tokens from the message object and no chunk.
#[tokio::test]
async fn records_agree_with_the_simulator_log_within_a_millisecond() {
    let _timing = common::timing_lock().await;
    const R: u32 = 3;
    const N: u32 = 16;
    const STREAMED: u64 = 8;
    let srv = MockServer::start(MockConfig {
        record_requests: true,
        log_token_times: true,
        reasoning_tokens: R,
        step_base_ms: 4.0,
        step_per_seq_ms: 0.0,
        prefill_overhead_ms: 10.0,
        prefill_rate: 0.0,
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let mut cfg = config(srv.url(), true);
    cfg.model = None;
    let w = Worker::new(cfg).await.unwrap();
    w.health_check().await.unwrap();
    assert_eq!(w.discover_model().await.unwrap(), srv.model());
    let clock = Clock::start();
    let mut recs = Vec::new();
    for id in 0..STREAMED {
        let d = dispatch(clock, id);
        recs.push(
            w.send(spec("say something now", N), d, CancellationToken::new())
                .await,
        );
    }
    let mut unstreamed = config(srv.url(), false);
    unstreamed.model = Some(srv.model().to_owned());
    let u = Worker::new(unstreamed).await.unwrap();
    let whole = send(&u, STREAMED, spec("say something now", N)).await;
    assert_eq!(w.ignored_events() + u.ignored_events(), 0);
    let mut log = srv.request_log();
    log.sort_by_key(|e| e.id);
    assert_eq!(log.len() as u64, STREAMED + 1);
    let (mut ttft_err, mut gap_err) = (Vec::new(), Vec::new());
    for (r, e) in recs.iter().zip(&log) {
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!((e.endpoint.as_str(), e.stream), ("/v1/messages", true));
        assert_eq!((r.output_tokens, e.planned_tokens), (N, N));
        assert_eq!(
            (r.prompt_tokens, r.prompt_tokens_source),
            (e.prompt_tokens, TokenSource::Usage)
        );
        assert_eq!(e.reasoning_tokens, R);
        let kinds: Vec<bool> = r.chunks.iter().map(|c| c.reasoning).collect();
        assert_eq!(kinds, (0..N).map(|i| i < R).collect::<Vec<_>>());
        assert_eq!(r.reasoning.map(|x| x.tokens), Some(R));
        let first = clock.since(tokio::time::Instant::from_std(e.first_token.unwrap()));
        ttft_err.push((r.chunks[0].at as f64 - first as f64).abs() / 1e6);
        assert_eq!(r.chunks.len(), e.token_unix_ns.len());
        for k in 1..r.chunks.len() {
            let c = r.chunks[k].at as f64 - r.chunks[k - 1].at as f64;
            let s = e.token_unix_ns[k] as f64 - e.token_unix_ns[k - 1] as f64;
            gap_err.push((c - s).abs() / 1e6);
        }
    }
    let (t, g) = (median(ttft_err), median(gap_err));
    println!("anthropic-messages against the simulator's log: median TTFT error {t:.3} ms, median ITL error {g:.3} ms");
    assert!(t < 1.0, "median first-token error {t} ms");
    assert!(g < 1.0, "median chunk-gap error {g} ms");
    let e = &log[STREAMED as usize];
    assert_eq!(whole.outcome, Outcome::Completed);
    assert!(!e.stream && whole.chunks.is_empty());
    assert_eq!(
        (whole.output_tokens, whole.prompt_tokens),
        (N, e.prompt_tokens)
    );
    srv.shutdown().await;
}

/// The simulator's errors come in Anthropic's shape: a body without `max_tokens` is refused
/// with an `invalid_request_error`.
#[tokio::test]
async fn simulator_errors_have_anthropics_shape() {
    let srv = MockServer::start(MockConfig::default()).await.unwrap();
    let (status, body) = post_raw(
        srv.addr(),
        "/v1/messages",
        r#"{"model":"x","messages":[{"role":"user","content":"hi"}]}"#,
    )
    .await;
    assert_eq!(status, 400);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("max_tokens"));
    srv.shutdown().await;
}

/// One HTTP/1.1 POST over a plain socket: its status and body.
async fn post_raw(addr: std::net::SocketAddr, path: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text[9..12].parse().unwrap();
    let body = text.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}
