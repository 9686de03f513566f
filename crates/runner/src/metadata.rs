//! The `args`, `worker` and `request_loader` entries of the report's configuration, in the
//! shape of guidellm's Metadata block (seed `guidellm-sweep-console.txt`), so the guidellm
//! console prints them as guidellm does.

use bench_profile::Transient;
use bench_worker::BackendKind;
use serde_json::{json, Value};

use crate::settings::Settings;

/// guidellm's `warmup_number` / `warmup_duration` (or cooldown) of a transient: requests or
/// seconds; a fraction is taken of `max_seconds`, else of `max_requests`.
fn split(
    t: Option<Transient>,
    max_seconds: Option<f64>,
    max_requests: Option<u64>,
) -> (Value, Value) {
    match t {
        None => (Value::Null, Value::Null),
        Some(Transient::Requests(n)) => (json!(n), Value::Null),
        Some(Transient::Seconds(s)) => (Value::Null, json!(s)),
        Some(Transient::Fraction(f)) => match (max_seconds, max_requests) {
            (Some(s), _) => (Value::Null, json!(f * s)),
            (None, Some(n)) => (json!((f * n as f64).round() as u64), Value::Null),
            (None, None) => (Value::Null, Value::Null),
        },
    }
}

/// Adds the three entries to `config` (an object).
pub fn add(config: &mut Value, s: &Settings, target: &str, model: &str) {
    let l = &s.load.limits;
    let (wn, wd) = split(s.load.warmup, l.max_seconds, l.max_requests);
    let (cn, cd) = split(s.load.cooldown, l.max_seconds, l.max_requests);
    let args = json!({
        "max_number": l.max_requests,
        "max_duration": l.max_seconds,
        "warmup_number": wn,
        "warmup_duration": wd,
        "cooldown_number": cn,
        "cooldown_duration": cd,
    });
    let t = &s.target;
    let path_key = match t.backend {
        BackendKind::OpenAiCompletions => "text_completions_path",
        BackendKind::OpenAiChat => "chat_completions_path",
        BackendKind::Tgi => "generate_stream_path",
        BackendKind::OpenAiResponses => "responses_path",
        BackendKind::AnthropicMessages => "messages_path",
        BackendKind::OpenAiEmbeddings => "embeddings_path",
        BackendKind::Rerank | BackendKind::CohereRerank => "rerank_path",
    };
    let path = t.endpoint.clone().unwrap_or_else(|| match t.backend {
        BackendKind::Tgi | BackendKind::CohereRerank => t.backend.default_path().to_string(),
        _ => format!("/v1{}", t.backend.default_path()),
    });
    let worker = json!({
        "type_": "generative_requests_worker",
        "backend_type": t.backend.name(),
        "backend_target": target,
        "backend_model": model,
        "backend_info": {
            "timeout": t.timeouts.total.as_secs_f64(),
            "http2": t.http2,
            "authorization": t.api_key.is_some(),
            path_key: path,
        },
    });
    let loader = json!({
        "type_": "generative_request_loader",
        "data": s.data.data,
        "data_args": s.data.data_column.as_ref().map(|c| json!({"column": c})),
        "processor": s.data.processor,
    });
    if let Value::Object(m) = config {
        m.insert("args".into(), args);
        m.insert("worker".into(), worker);
        m.insert("request_loader".into(), loader);
    }
}
