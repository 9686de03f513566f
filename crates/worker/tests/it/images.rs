//! Images in chat requests: the exact body sent (capture server): the prompt as a text part,
//! then one `image_url` part per image with its URL as given; the record's image counts.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::Arc;

use bench_core::{
    Backend, CancellationToken, Clock, Dispatch, ImageCounts, ImageInput, Outcome, RequestSpec,
};
use bench_worker::{BackendKind, Worker, WorkerConfig};
use common::Script;

#[tokio::test]
async fn chat_sends_text_then_image_url_parts() {
    let srv = common::start(|_| {
        Script::sse(&[
            r#"{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ])
    })
    .await;
    let w = Worker::new(WorkerConfig {
        target: srv.url(),
        backend: BackendKind::OpenAiChat,
        model: Some("m".into()),
        ..WorkerConfig::default()
    })
    .await
    .unwrap();
    let images = vec![
        ImageInput {
            url: Arc::from("data:image/png;base64,AAAA"),
            size: Some((64, 32)),
            bytes: 3,
        },
        ImageInput {
            url: Arc::from("https://example.com/cat.jpg"),
            size: None,
            bytes: 0,
        },
    ];
    let spec = RequestSpec {
        prompt: "what is this".into(),
        prompt_tokens: 3,
        output_tokens: Some(4),
        at: None,
        batch: Vec::new(),
        images,
    };
    let clock = Clock::start();
    let d = Dispatch {
        id: 0,
        clock,
        scheduled: 0,
        slot: 0,
    };
    let r = w.send(spec, d, CancellationToken::new()).await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(
        r.images,
        Some(ImageCounts {
            count: 2,
            pixels: 64 * 32,
            bytes: 3
        })
    );
    let body: serde_json::Value =
        serde_json::from_slice(&srv.seen.lock().unwrap()[0].body).unwrap();
    assert_eq!(
        body["messages"],
        serde_json::json!([{"role": "user", "content": [
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}
        ]}])
    );
}
