//! The pooling APIs: `/v1/embeddings` and rerank (`/v1/rerank`, `/rerank`, `/v2/rerank`).
//!
//! They do not go through the decode engine. Each request is routed to a replica as a
//! generation request is, waits for one of that replica's `max_batch` slots (first come, first
//! served) and holds it for its closed-form service time ([`MockConfig::pool_service`]):
//! `pool_base_ms + pool_per_input_ms * inputs + 1000 * tokens / pool_token_rate` ms, where
//! `inputs` is the embeddings inputs or the rerank documents, and `tokens` the input tokens: an
//! embeddings request's inputs counted, a rerank request's query counted once per document plus
//! the documents (a cross-encoder reads each pair). So `max_batch` requests per replica are
//! served at once and one replica's capacity is `max_batch / service` requests per second.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::Value;

use super::{fail_plain, pending_log, read_body, response, State};
use crate::body::MockBody;
use crate::faults::Rng;
use crate::request::PromptCounter;
use crate::MockConfig;

/// Which pooling API a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PoolApi {
    /// `/v1/embeddings`.
    Embeddings,
    /// vLLM's `/v1/rerank` and `/rerank`: `usage.total_tokens` in the reply.
    Rerank,
    /// Cohere's `/v2/rerank`: `meta.billed_units.search_units` in the reply, no token count.
    CohereRerank,
}

/// The pooling API served at `path`, if any.
pub(crate) fn route(path: &str) -> Option<PoolApi> {
    match path {
        "/v1/embeddings" => Some(PoolApi::Embeddings),
        "/v1/rerank" | "/rerank" => Some(PoolApi::Rerank),
        "/v2/rerank" => Some(PoolApi::CohereRerank),
        _ => None,
    }
}

/// What a pooling request asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pooled {
    /// Embeddings inputs, or rerank documents.
    inputs: u32,
    /// Input tokens as the server counts them (see the module's doc).
    tokens: u32,
}

/// The tokens of one embeddings input: a text, or a list of token ids.
fn input_tokens(v: &Value, prompts: &PromptCounter) -> Result<u32, String> {
    match v {
        Value::String(s) => Ok(prompts.count(s)),
        Value::Array(ids) if ids.iter().all(Value::is_u64) => Ok(ids.len() as u32),
        _ => Err("each input must be a string or a list of token ids".into()),
    }
}

fn parse_embeddings(body: &Value, prompts: &PromptCounter) -> Result<Pooled, String> {
    let inputs: Vec<&Value> = match body.get("input") {
        Some(Value::Array(a)) if a.is_empty() => return Err("`input` is empty".into()),
        // A flat list of token ids is one input.
        Some(Value::Array(a)) if a.iter().all(Value::is_u64) => vec![&body["input"]],
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v @ Value::String(_)) => vec![v],
        _ => return Err("`input` (a string or a list) is required".into()),
    };
    let mut tokens = 0u32;
    for v in &inputs {
        tokens = tokens.saturating_add(input_tokens(v, prompts)?);
    }
    Ok(Pooled {
        inputs: inputs.len() as u32,
        tokens,
    })
}

fn parse_rerank(body: &Value, prompts: &PromptCounter) -> Result<Pooled, String> {
    let query = match body.get("query") {
        Some(Value::String(q)) => prompts.count(q),
        _ => return Err("`query` (a string) is required".into()),
    };
    let docs = match body.get("documents") {
        Some(Value::Array(d)) if !d.is_empty() => d,
        _ => return Err("`documents` (a non-empty list) is required".into()),
    };
    let mut tokens = 0u32;
    for d in docs {
        let text = match d {
            Value::String(s) => s.as_str(),
            Value::Object(m) => m.get("text").and_then(Value::as_str).unwrap_or_default(),
            _ => return Err("each document must be a string or an object with `text`".into()),
        };
        tokens = tokens.saturating_add(query.saturating_add(prompts.count(text)));
    }
    Ok(Pooled {
        inputs: docs.len() as u32,
        tokens,
    })
}

fn parse(api: PoolApi, body: &[u8], prompts: &PromptCounter) -> Result<Pooled, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
    match api {
        PoolApi::Embeddings => parse_embeddings(&v, prompts),
        PoolApi::Rerank | PoolApi::CohereRerank => parse_rerank(&v, prompts),
    }
}

/// A pseudo-random number in [-1, 1) with 4 decimals (the reply's vectors and scores).
fn unit(rng: &mut Rng) -> f64 {
    ((rng.next_u64() % 20_000) as f64 - 10_000.0) / 10_000.0
}

fn embeddings_body(cfg: &MockConfig, model: &str, p: &Pooled, rng: &mut Rng) -> String {
    let mut out = String::from(r#"{"object":"list","data":["#);
    for i in 0..p.inputs {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, r#"{{"object":"embedding","index":{i},"embedding":["#);
        for j in 0..cfg.embedding_dim {
            if j > 0 {
                out.push(',');
            }
            let _ = write!(out, "{}", unit(rng));
        }
        out.push_str("]}");
    }
    let _ = write!(
        out,
        r#"],"model":"{model}","usage":{{"prompt_tokens":{t},"total_tokens":{t}}}}}"#,
        t = p.tokens
    );
    out
}

fn rerank_body(api: PoolApi, id: u64, model: &str, p: &Pooled, rng: &mut Rng) -> String {
    let mut scored: Vec<(u32, f64)> = (0..p.inputs).map(|i| (i, unit(rng).abs())).collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    let results: Vec<String> = scored
        .iter()
        .map(|(i, s)| format!(r#"{{"index":{i},"relevance_score":{s}}}"#))
        .collect();
    let results = results.join(",");
    match api {
        PoolApi::CohereRerank => format!(
            r#"{{"id":"rerank-{id}","results":[{results}],"meta":{{"api_version":{{"version":"2"}},"billed_units":{{"search_units":1}}}}}}"#
        ),
        _ => format!(
            r#"{{"id":"rerank-{id}","model":"{model}","usage":{{"total_tokens":{}}},"results":[{results}]}}"#,
            p.tokens
        ),
    }
}

fn path(api: PoolApi) -> &'static str {
    match api {
        PoolApi::Embeddings => "/v1/embeddings",
        PoolApi::Rerank => "/v1/rerank",
        PoolApi::CohereRerank => "/v2/rerank",
    }
}

/// Serves one pooling request: parse, wait for a slot, hold it for the service time, answer.
pub(crate) async fn serve(
    state: &Arc<State>,
    req: Request<Incoming>,
    api: PoolApi,
) -> Response<MockBody> {
    let arrival = Instant::now();
    let id = state
        .next_id
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let lease = state.replicas.route();
    let mut log = pending_log(state, id, path(api), arrival, &lease);
    let body = match read_body(req).await {
        Ok(b) => b,
        Err((status, msg)) => return fail_plain(state, log.take(), status, &msg),
    };
    let p = match parse(api, &body, &state.prompts) {
        Ok(p) => p,
        Err(msg) => return fail_plain(state, log.take(), StatusCode::BAD_REQUEST, &msg),
    };
    drop(body);
    let service = state.cfg.pool_service(p.inputs, p.tokens);
    if !service.is_zero() {
        // The semaphore is never closed: a permit always comes.
        let _slot = state.replicas.get(&lease).pool_slots.acquire().await;
        // Its service starts: `submitted_unix_ns` in the log (to `reply_unix_ns`, the time
        // the slot was held, timer lateness included).
        log.submitted();
        tokio::time::sleep(service).await;
    }
    state.metrics.count_status(200);
    state.metrics.add_prompt(u64::from(p.tokens));
    let mut rng = Rng::new(state.cfg.seed, id);
    let model = &state.model_escaped;
    let data = match api {
        PoolApi::Embeddings => embeddings_body(&state.cfg, model, &p, &mut rng),
        _ => rerank_body(api, id, model, &p, &mut rng),
    };
    let mut log = log.take();
    if let Some(l) = &mut log {
        l.entry.prompt_tokens = p.tokens;
        l.entry.inputs = p.inputs;
        l.entry.reply_unix_ns = Some(l.sink.timebase.unix_ns(Instant::now()));
    }
    response(
        StatusCode::OK,
        "application/json",
        MockBody::full(Bytes::from(data), 0, log).leased(lease),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> PromptCounter {
        PromptCounter::new(bench_tokenizer::Tokenizer::builtin())
    }

    #[test]
    fn requests_are_counted_as_documented() {
        let c = counter();
        let (a, b) = (c.count("hello world"), c.count("the cat sat"));
        let e = parse(
            PoolApi::Embeddings,
            br#"{"input":["hello world","the cat sat"]}"#,
            &c,
        );
        assert_eq!(
            e,
            Ok(Pooled {
                inputs: 2,
                tokens: a + b
            })
        );
        let one = parse(PoolApi::Embeddings, br#"{"input":"hello world"}"#, &c);
        assert_eq!(
            one,
            Ok(Pooled {
                inputs: 1,
                tokens: a
            })
        );
        let ids = parse(PoolApi::Embeddings, br#"{"input":[[1,2,3],[4]]}"#, &c);
        assert_eq!(
            ids,
            Ok(Pooled {
                inputs: 2,
                tokens: 4
            })
        );
        let r = parse(
            PoolApi::Rerank,
            br#"{"query":"hello world","documents":["the cat sat",{"text":"hello world"}]}"#,
            &c,
        );
        assert_eq!(
            r,
            Ok(Pooled {
                inputs: 2,
                tokens: (a + b) + (a + a)
            })
        );
        for bad in [
            &br#"{"input":[]}"#[..],
            br#"{"input":3}"#,
            br#"{"model":"m"}"#,
            br#"{"input":[true]}"#,
        ] {
            assert!(parse(PoolApi::Embeddings, bad, &c).is_err());
        }
        assert!(parse(PoolApi::Rerank, br#"{"query":"q","documents":[]}"#, &c).is_err());
        assert!(parse(PoolApi::Rerank, br#"{"documents":["d"]}"#, &c).is_err());
    }

    #[test]
    fn the_service_time_is_the_closed_form() {
        let cfg = MockConfig {
            pool_base_ms: 2.0,
            pool_per_input_ms: 0.5,
            pool_token_rate: 1000.0,
            ..MockConfig::default()
        };
        // 2 + 0.5 * 4 + 1000 * 30 / 1000 = 34 ms.
        assert_eq!(cfg.pool_service(4, 30).as_micros(), 34_000);
        assert!(MockConfig::zero_delay().pool_service(8, 1000).is_zero());
    }
}
