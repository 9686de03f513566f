//! Replies of the pooling APIs (embeddings, rerank): one JSON document, checked against the
//! request that asked for it (docs/backends.md, "Embeddings and rerank").
//!
//! The vectors and scores themselves are never kept: a vector's elements are counted and
//! dropped as they are read, so a batch of large embeddings costs no allocation per float.

use std::fmt;

use bench_core::Outcome;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

use crate::excerpt::excerpt;
use crate::BackendKind;

/// What a valid pooling reply said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolingReply {
    /// Vectors (embeddings) or results (rerank) in the reply.
    pub(crate) items: u32,
    /// Input tokens the server counted, when it said.
    pub(crate) prompt_tokens: Option<u32>,
}

/// The length of an embedding: elements of a float list, or characters of a base64 string.
struct VectorLen(usize);

impl<'de> Deserialize<'de> for VectorLen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = VectorLen;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of numbers or a base64 string")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<VectorLen, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(VectorLen(n))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<VectorLen, E> {
                Ok(VectorLen(s.len()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

/// Cohere's `meta`: `tokens.input_tokens` or `billed_units.input_tokens`.
#[derive(Deserialize)]
struct Meta {
    #[serde(default)]
    tokens: Option<MetaTokens>,
    #[serde(default)]
    billed_units: Option<MetaTokens>,
}

#[derive(Deserialize)]
struct MetaTokens {
    #[serde(default)]
    input_tokens: Option<f64>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    #[serde(default)]
    embedding: Option<VectorLen>,
}

#[derive(Deserialize)]
struct RerankItem {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    relevance_score: Option<f64>,
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    data: Option<Vec<EmbeddingItem>>,
    #[serde(default)]
    results: Option<Vec<RerankItem>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    meta: Option<Meta>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    /// vLLM's error body: `{"object": "error", "message": ...}`.
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

fn bad(message: String) -> Outcome {
    Outcome::BadReply { message }
}

fn clamp_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl Reply {
    fn prompt_tokens(&self) -> Option<u32> {
        let usage = self.usage.as_ref();
        let meta = self.meta.as_ref();
        let cohere = meta.and_then(|m| {
            m.tokens
                .as_ref()
                .and_then(|t| t.input_tokens)
                .or(m.billed_units.as_ref().and_then(|b| b.input_tokens))
        });
        usage
            .and_then(|u| u.prompt_tokens.or(u.total_tokens))
            .map(clamp_u32)
            .or(cohere
                .filter(|t| t.is_finite() && *t >= 0.0)
                .map(|t| t as u32))
    }

    fn error(&self) -> Option<String> {
        if let Some(e) = &self.error {
            let msg = match e {
                serde_json::Value::Object(m) => m.get("message").unwrap_or(e).to_string(),
                other => other.to_string(),
            };
            return Some(excerpt(msg.as_bytes()));
        }
        (self.object.as_deref() == Some("error"))
            .then(|| excerpt(self.message.as_deref().unwrap_or("error").as_bytes()))
    }
}

/// Reads a pooling reply for a request of `inputs` inputs: a well-formed reply with one
/// vector per input (embeddings), or between 1 and the documents' count of results, each
/// naming a document (rerank). Anything else is [`Outcome::BadReply`] (an error object:
/// [`Outcome::StreamError`], malformed JSON: [`Outcome::Protocol`]).
pub(crate) fn read(
    backend: BackendKind,
    body: &[u8],
    inputs: usize,
) -> Result<PoolingReply, Outcome> {
    let reply: Reply = serde_json::from_slice(body).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => {
            bad(format!("{backend} reply is not of the expected shape: {e}"))
        }
        _ => Outcome::Protocol {
            message: format!("{backend} reply is not JSON ({e}): {}", excerpt(body)),
        },
    })?;
    if let Some(message) = reply.error() {
        return Err(Outcome::StreamError { message });
    }
    let prompt_tokens = reply.prompt_tokens();
    let items = match backend {
        BackendKind::Rerank | BackendKind::CohereRerank => {
            check_results(backend, reply.results.as_deref(), inputs.saturating_sub(1))?
        }
        _ => check_vectors(reply.data.as_deref(), inputs)?,
    };
    Ok(PoolingReply {
        items,
        prompt_tokens,
    })
}

fn check_vectors(data: Option<&[EmbeddingItem]>, inputs: usize) -> Result<u32, Outcome> {
    let data = data.ok_or_else(|| bad("embeddings reply has no `data` list of vectors".into()))?;
    if let Some(i) = data
        .iter()
        .position(|d| d.embedding.as_ref().is_none_or(|v| v.0 == 0))
    {
        return Err(bad(format!(
            "embeddings reply item {i} has no vector (`embedding` missing or empty)"
        )));
    }
    if data.len() != inputs {
        return Err(bad(format!(
            "embeddings reply has {} vectors for {inputs} inputs",
            data.len()
        )));
    }
    Ok(clamp_u32(data.len() as u64))
}

fn check_results(
    backend: BackendKind,
    results: Option<&[RerankItem]>,
    documents: usize,
) -> Result<u32, Outcome> {
    let results = match results {
        Some(r) if !r.is_empty() => r,
        _ => return Err(bad(format!("{backend} reply has no `results`"))),
    };
    if results.len() > documents {
        return Err(bad(format!(
            "{backend} reply has {} results for {documents} documents",
            results.len()
        )));
    }
    if let Some(i) = results
        .iter()
        .position(|r| r.relevance_score.is_none() || r.index.is_none_or(|x| x >= documents as u64))
    {
        return Err(bad(format!(
            "{backend} reply result {i} has no `relevance_score` or no `index` below {documents}"
        )));
    }
    Ok(clamp_u32(results.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(r: Result<PoolingReply, Outcome>) -> String {
        match r {
            Ok(p) => format!("ok {} {:?}", p.items, p.prompt_tokens),
            Err(o) => format!("{} {}", o.kind_name(), o.message().unwrap_or("")),
        }
    }

    #[test]
    fn embeddings_replies() {
        let e = BackendKind::OpenAiEmbeddings;
        let ok = br#"{"data":[{"embedding":[0.1,0.2]},{"embedding":"AAAA"}],"usage":{"prompt_tokens":7,"total_tokens":7}}"#;
        assert_eq!(kind(read(e, ok, 2)), "ok 2 Some(7)");
        assert!(kind(read(e, ok, 3))
            .starts_with("bad_reply embeddings reply has 2 vectors for 3 inputs"));
        assert!(kind(read(e, br#"{"usage":{}}"#, 1))
            .starts_with("bad_reply embeddings reply has no `data`"));
        assert!(kind(read(e, br#"{"data":[{"index":0}]}"#, 1)).contains("item 0 has no vector"));
        assert!(
            kind(read(e, br#"{"data":[{"embedding":[]}]}"#, 1)).contains("item 0 has no vector")
        );
        assert!(kind(read(e, br#"{"data":3}"#, 1)).starts_with("bad_reply"));
        assert!(kind(read(e, br#"{"data":[{"emb"#, 1)).starts_with("protocol"));
        assert!(kind(read(e, br#"{"object":"error","message":"boom"}"#, 1))
            .starts_with("stream_error boom"));
    }

    #[test]
    fn rerank_replies() {
        let r = BackendKind::Rerank;
        let ok = br#"{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}],"usage":{"total_tokens":12}}"#;
        assert_eq!(kind(read(r, ok, 3)), "ok 2 Some(12)");
        assert!(kind(read(r, ok, 2)).contains("2 results for 1 documents"));
        assert!(kind(read(r, br#"{"results":[]}"#, 3)).contains("has no `results`"));
        assert!(kind(read(r, br#"{"id":"x"}"#, 3)).contains("has no `results`"));
        assert!(kind(read(
            r,
            br#"{"results":[{"index":5,"relevance_score":1}]}"#,
            3
        ))
        .contains("result 0"));
        let cohere = br#"{"results":[{"index":0,"relevance_score":0.5}],"meta":{"billed_units":{"search_units":1}}}"#;
        assert_eq!(
            kind(read(BackendKind::CohereRerank, cohere, 2)),
            "ok 1 None"
        );
        let tokens = br#"{"results":[{"index":0,"relevance_score":0.5}],"meta":{"tokens":{"input_tokens":9}}}"#;
        assert_eq!(
            kind(read(BackendKind::CohereRerank, tokens, 2)),
            "ok 1 Some(9)"
        );
    }
}
