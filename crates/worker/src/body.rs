//! Request URLs and bodies for each backend.

use bench_core::{ChatMessage, RequestSpec, TurnRequest};
use bytes::Bytes;
use http::Uri;
use serde::Serialize;

use crate::{redact_url, BackendKind, Error, WorkerConfig};

/// The URLs a worker talks to, all under the target's path prefix.
#[derive(Debug, Clone)]
pub(crate) struct Urls {
    /// Where requests go.
    pub(crate) generate: Uri,
    /// OpenAI model list (`<api root>/models`).
    pub(crate) models: Uri,
    /// `<root>/health` (vLLM, TGI, SGLang).
    pub(crate) health: Uri,
    /// TGI's `<root>/info`.
    pub(crate) info: Uri,
    /// Where servers say their batch size ([`bench_core::ServerBatch`]): `<root>/metrics`
    /// (vLLM), `<root>/props` (llama.cpp), `<root>/get_server_info` (SGLang).
    pub(crate) batch: [Uri; 3],
    /// The target, safe to print.
    pub(crate) display: String,
}

fn join(scheme: &str, authority: &str, path: &str, query: Option<&str>) -> Result<Uri, String> {
    let pq = match query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    Uri::builder()
        .scheme(scheme)
        .authority(authority)
        .path_and_query(pq)
        .build()
        .map_err(|e| e.to_string())
}

/// A target URL checked as every request's base: `http://` or `https://`, a host, a port in
/// 1-65535 when given, no credentials. Its URI, scheme and authority; the reason otherwise.
fn checked_target(target: &str) -> Result<(Uri, &'static str, String), String> {
    let uri: Uri = target
        .trim()
        .parse()
        .map_err(|e: http::uri::InvalidUri| e.to_string())?;
    let scheme = match uri.scheme_str() {
        Some("http") => "http",
        Some("https") => "https",
        Some(_) => return Err("the scheme must be http:// or https://".into()),
        None => return Err("missing scheme; write http://HOST:PORT or https://HOST".into()),
    };
    let authority = uri.authority().ok_or("missing host")?.as_str().to_owned();
    if authority.contains('@') {
        return Err("credentials in the URL are not supported; use --api-key or --header".into());
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err("missing host".into());
    }
    if let Some((_, port)) = authority.rsplit_once(':').filter(|(_, p)| !p.contains(']')) {
        if !matches!(port.parse::<u16>(), Ok(1..)) {
            return Err(format!("the port `{port}` is not in 1-65535"));
        }
    }
    Ok((uri, scheme, authority))
}

/// The host and port a target URL connects to (the scheme's port when it names none), by the
/// rule every request's URL is checked with; [`Error::InvalidTarget`] otherwise.
pub fn target_host_port(target: &str) -> Result<(String, u16), Error> {
    let (uri, scheme, _) = checked_target(target).map_err(|reason| Error::InvalidTarget {
        target: redact_url(target.trim()),
        reason,
    })?;
    let host = uri.host().unwrap_or_default();
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    Ok((host, port))
}

impl Urls {
    pub(crate) fn new(cfg: &WorkerConfig) -> Result<Urls, Error> {
        let display = redact_url(cfg.target.trim());
        let bad = |reason: &str| Error::InvalidTarget {
            target: display.clone(),
            reason: reason.to_owned(),
        };
        let (uri, scheme, authority) = checked_target(&cfg.target).map_err(|r| bad(&r))?;
        let query = uri.query();
        let prefix = uri.path().trim_end_matches('/');
        let (root, api) = match prefix.strip_suffix("/v1") {
            Some(root) => (root.to_owned(), prefix.to_owned()),
            None => (prefix.to_owned(), format!("{prefix}/v1")),
        };
        let generate_path = match &cfg.endpoint {
            Some(ep) => {
                let ep = ep.trim();
                if ep.is_empty() || ep.contains("://") || ep.contains(char::is_whitespace) {
                    return Err(Error::InvalidEndpoint {
                        endpoint: ep.to_owned(),
                        reason: "expected a path such as /v1/completions".into(),
                    });
                }
                if ep.starts_with('/') {
                    format!("{prefix}{ep}")
                } else {
                    format!("{prefix}/{ep}")
                }
            }
            None => match cfg.backend {
                BackendKind::OpenAiCompletions
                | BackendKind::OpenAiChat
                | BackendKind::OpenAiResponses
                | BackendKind::AnthropicMessages
                | BackendKind::OpenAiEmbeddings
                | BackendKind::Rerank => format!("{api}{}", cfg.backend.default_path()),
                BackendKind::Tgi | BackendKind::CohereRerank => {
                    format!("{root}{}", cfg.backend.default_path())
                }
            },
        };
        let mk = |path: &str| join(scheme, &authority, path, query).map_err(|e| bad(&e));
        let generate = match &cfg.endpoint {
            Some(ep) => join(scheme, &authority, &generate_path, query).map_err(|e| {
                Error::InvalidEndpoint {
                    endpoint: ep.clone(),
                    reason: e,
                }
            })?,
            None => mk(&generate_path)?,
        };
        Ok(Urls {
            generate,
            models: mk(&format!("{api}/models"))?,
            health: mk(&format!("{root}/health"))?,
            info: mk(&format!("{root}/info"))?,
            batch: [
                mk(&format!("{root}/metrics"))?,
                mk(&format!("{root}/props"))?,
                mk(&format!("{root}/get_server_info"))?,
            ],
            display: format!("{scheme}://{authority}{prefix}"),
        })
    }
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct CompletionsBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    prompt: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_tokens: Option<u32>,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: Content<'a>,
    /// An assistant message's tool call (OpenAI chat shape; its content is `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[ToolCallOut<'a>; 1]>,
    /// A `role: tool` message: the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> Message<'a> {
    fn new(role: &'static str, content: Content<'a>) -> Self {
        Message {
            role,
            content,
            tool_calls: None,
            tool_call_id: None,
        }
    }

    /// A turn's chat message in OpenAI's chat shape.
    fn chat(m: ChatMessage<'a>) -> Self {
        match m {
            ChatMessage::Text(role, text) => Message::new(role, Content::Text(text)),
            ChatMessage::ToolCall(k) => Message {
                tool_calls: Some([ToolCallOut {
                    id: &k.id,
                    kind: "function",
                    function: FunctionOut {
                        name: &k.name,
                        arguments: &k.arguments,
                    },
                }]),
                ..Message::new("assistant", Content::Null)
            },
            ChatMessage::ToolResult { id, content } => Message {
                tool_call_id: Some(id),
                ..Message::new("tool", Content::Text(content))
            },
        }
    }
}

#[derive(Serialize)]
struct ToolCallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut<'a>,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// A message's content: its text, or (a chat prompt with images) a list of parts.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
    /// `null` (an assistant message that only calls a tool).
    Null,
}

/// A content part: the text, then one `image_url` part per image.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: &'a str,
}

#[derive(Serialize)]
struct ChatBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    messages: &'a [Message<'a>],
    /// A session's tool definitions (docs/data.md, "Tool calls").
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_tokens: Option<u32>,
}

#[derive(Serialize)]
struct TgiParameters {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_new_tokens: Option<u32>,
    details: bool,
}

/// `/v1/responses`: the conversation as an `input` list of messages (one user message for a
/// single request), the output limit as `max_output_tokens`. No `stream_options`: the final
/// `response.completed` event always carries the usage.
#[derive(Serialize)]
struct ResponsesBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    input: &'a [Message<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_tokens: Option<u32>,
}

/// Anthropic's `/v1/messages`: the system prompt apart (`system`), the user and assistant
/// turns as `messages`, and the output limit as `max_tokens`, which the API requires
/// ([`ANTHROPIC_DEFAULT_MAX_TOKENS`] when the request fixes no length). The usage always
/// comes with the stream's events (no `stream_options`).
#[derive(Serialize)]
struct MessagesBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: &'a [Message<'a>],
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_tokens: Option<u32>,
}

/// The `max_tokens` sent to Anthropic's Messages API when a request fixes no output length:
/// the API refuses a body without one. Override it with `--extra-body '{"max_tokens": N}'`.
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 4096;

/// `/v1/embeddings`: every input of the request, in order.
#[derive(Serialize)]
struct EmbeddingsBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    input: Vec<&'a str>,
}

/// `/v1/rerank` and `/v2/rerank`: the first input is the query, the others the documents.
#[derive(Serialize)]
struct RerankBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    query: &'a str,
    documents: Vec<&'a str>,
}

#[derive(Serialize)]
struct TgiBody<'a> {
    inputs: &'a str,
    parameters: TgiParameters,
    stream: bool,
}

/// The body fields only vLLM-like servers accept (strict OpenAI-compatible APIs answer 400).
pub const VLLM_ONLY_FIELDS: [&str; 2] = ["ignore_eos", "min_tokens"];

/// Servers (by their model list's `owned_by`) known to accept [`VLLM_ONLY_FIELDS`]: vLLM,
/// SGLang, llama.cpp's server and bench's simulator.
const VLLM_LIKE_OWNERS: [&str; 5] = ["vllm", "sglang", "llamacpp", "llama.cpp", "bench-mock"];

/// Whether a server whose model list says `owned_by` wants the vLLM-only fields: yes for
/// vLLM, SGLang, llama.cpp and bench's simulator, no for anything else or an unknown owner.
pub fn vllm_extensions_wanted(owned_by: Option<&str>) -> bool {
    owned_by.is_some_and(|o| {
        VLLM_LIKE_OWNERS
            .iter()
            .any(|v| o.trim().eq_ignore_ascii_case(v))
    })
}

/// The vLLM-only field a 400 answer's body names, if any: the server refused a field bench
/// sent because the extensions were on.
pub fn rejected_vllm_field(status: u16, body: &str) -> Option<&'static str> {
    if status != 400 {
        return None;
    }
    VLLM_ONLY_FIELDS.into_iter().find(|f| body.contains(f))
}

/// Builds the JSON body of each request.
#[derive(Debug, Clone)]
pub(crate) struct BodyBuilder {
    backend: BackendKind,
    extra: Option<serde_json::Map<String, serde_json::Value>>,
    ignore_eos: bool,
    min_tokens: bool,
    include_usage: bool,
    stream: bool,
}

/// Merges `extra` into `base`, recursing into objects; `extra`'s values win.
fn merge(
    base: &mut serde_json::Map<String, serde_json::Value>,
    extra: &serde_json::Map<String, serde_json::Value>,
) {
    for (k, v) in extra {
        match (base.get_mut(k), v) {
            (Some(serde_json::Value::Object(b)), serde_json::Value::Object(e)) => merge(b, e),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

impl BodyBuilder {
    pub(crate) fn new(cfg: &WorkerConfig) -> Result<Self, Error> {
        if !cfg.stream && cfg.backend == BackendKind::Tgi {
            return Err(Error::NoStream {
                backend: cfg.backend,
            });
        }
        let extra = match &cfg.extra_body {
            None => None,
            Some(serde_json::Value::Object(m)) if m.is_empty() => None,
            Some(serde_json::Value::Object(m)) => Some(m.clone()),
            Some(other) => {
                return Err(Error::InvalidExtraBody {
                    kind: json_kind(other),
                })
            }
        };
        Ok(Self {
            backend: cfg.backend,
            extra,
            ignore_eos: cfg.vllm_extensions && cfg.ignore_eos,
            min_tokens: cfg.vllm_extensions && cfg.min_tokens,
            include_usage: cfg.include_usage,
            stream: cfg.stream,
        })
    }

    /// The body for `spec`, `model` included when known.
    pub(crate) fn build(&self, model: Option<&str>, spec: &RequestSpec) -> Bytes {
        if self.backend.pooling() {
            return self.build_pooling(model, spec);
        }
        if !spec.images.is_empty() && self.backend == BackendKind::OpenAiChat {
            let parts = std::iter::once(Part::Text { text: &spec.prompt })
                .chain(spec.images.iter().map(|i| Part::ImageUrl {
                    image_url: ImageUrl { url: &i.url },
                }))
                .collect();
            let messages = [Message::new("user", Content::Parts(parts))];
            return self.build_with(model, spec, &messages, None);
        }
        let messages = [Message::new("user", Content::Text(&spec.prompt))];
        self.build_with(model, spec, &messages, None)
    }

    /// The body of a session's turn: chat sends the conversation as messages (system prompt,
    /// then user and assistant turns, the assistant's being the server's own replies); the
    /// completions and TGI backends send it flattened ([`TurnRequest::flattened`]).
    pub(crate) fn build_turn(&self, model: Option<&str>, turn: &TurnRequest) -> Bytes {
        let flat = turn.flattened();
        let messages: Vec<Message<'_>> = match self.backend {
            BackendKind::OpenAiChat => turn
                .chat_messages()
                .into_iter()
                .map(Message::chat)
                .collect(),
            BackendKind::OpenAiResponses | BackendKind::AnthropicMessages => turn
                .messages()
                .into_iter()
                .map(|(role, content)| Message::new(role, Content::Text(content)))
                .collect(),
            _ => Vec::new(),
        };
        // Definitions are the loader's canonical JSON text: parsing them back cannot fail.
        let tools = turn.conversation.tools.as_ref().map(|t| {
            t.definitions
                .iter()
                .filter_map(|d| serde_json::from_str(d).ok())
                .collect()
        });
        self.build_with(model, &flat, &messages, tools)
    }

    /// An embeddings or rerank body: no stream, no output length.
    fn build_pooling(&self, model: Option<&str>, spec: &RequestSpec) -> Bytes {
        let batch = spec.batch.iter().map(|s| &**s);
        match self.backend {
            BackendKind::Rerank | BackendKind::CohereRerank => self.finish(&RerankBody {
                model,
                query: &spec.prompt,
                documents: batch.collect(),
            }),
            _ => self.finish(&EmbeddingsBody {
                model,
                input: std::iter::once(&*spec.prompt).chain(batch).collect(),
            }),
        }
    }

    fn build_with(
        &self,
        model: Option<&str>,
        spec: &RequestSpec,
        messages: &[Message<'_>],
        tools: Option<Vec<serde_json::Value>>,
    ) -> Bytes {
        let out = spec.output_tokens;
        let fixed = out.is_some();
        let ignore_eos = (fixed && self.ignore_eos).then_some(true);
        let min_tokens = if self.min_tokens { out } else { None };
        let stream_options = (self.include_usage && self.stream).then_some(StreamOptions {
            include_usage: true,
        });
        let stream = self.stream;
        match self.backend {
            BackendKind::OpenAiCompletions => self.finish(&CompletionsBody {
                model,
                prompt: &spec.prompt,
                max_tokens: out,
                stream,
                stream_options,
                ignore_eos,
                min_tokens,
            }),
            BackendKind::OpenAiChat => self.finish(&ChatBody {
                model,
                messages,
                tools,
                max_completion_tokens: out,
                stream,
                stream_options,
                ignore_eos,
                min_tokens,
            }),
            BackendKind::OpenAiResponses => self.finish(&ResponsesBody {
                model,
                input: messages,
                max_output_tokens: out,
                stream,
                ignore_eos,
                min_tokens,
            }),
            BackendKind::AnthropicMessages => {
                // The API takes the system prompt apart, never as a message.
                let (system, messages) = match messages.split_first() {
                    Some((first, rest)) if first.role == "system" => match first.content {
                        Content::Text(t) => (Some(t), rest),
                        Content::Parts(_) | Content::Null => (None, messages),
                    },
                    _ => (None, messages),
                };
                self.finish(&MessagesBody {
                    model,
                    system,
                    messages,
                    max_tokens: out.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
                    stream,
                    ignore_eos,
                    min_tokens,
                })
            }
            BackendKind::Tgi => self.finish(&TgiBody {
                inputs: &spec.prompt,
                parameters: TgiParameters {
                    max_new_tokens: out,
                    details: true,
                },
                stream: true,
            }),
            BackendKind::OpenAiEmbeddings | BackendKind::Rerank | BackendKind::CohereRerank => {
                self.build_pooling(model, spec)
            }
        }
    }

    fn finish<T: Serialize>(&self, body: &T) -> Bytes {
        match &self.extra {
            // Serializing plain structs of strings and integers cannot fail.
            None => Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
            Some(extra) => {
                let mut v = serde_json::to_value(body).unwrap_or_default();
                if let serde_json::Value::Object(m) = &mut v {
                    merge(m, extra);
                }
                Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(target: &str, backend: BackendKind) -> WorkerConfig {
        WorkerConfig {
            target: target.into(),
            backend,
            ..WorkerConfig::default()
        }
    }

    fn spec(out: Option<u32>) -> RequestSpec {
        RequestSpec {
            prompt: "Say \"hi\"\n".into(),
            prompt_tokens: 4,
            output_tokens: out,
            at: None,
            batch: Vec::new(),
            images: Vec::new(),
        }
    }

    fn body(c: &WorkerConfig, model: Option<&str>, out: Option<u32>) -> serde_json::Value {
        let b = BodyBuilder::new(c)
            .expect("builder")
            .build(model, &spec(out));
        serde_json::from_slice(&b).expect("json")
    }

    #[test]
    fn urls_keep_the_path_prefix_and_do_not_double_v1() {
        let u = Urls::new(&cfg("http://h:8000", BackendKind::OpenAiCompletions)).expect("url");
        assert_eq!(u.generate.to_string(), "http://h:8000/v1/completions");
        assert_eq!(u.models.to_string(), "http://h:8000/v1/models");
        assert_eq!(u.health.to_string(), "http://h:8000/health");
        let u = Urls::new(&cfg("https://h/proxy/v1/", BackendKind::OpenAiChat)).expect("url");
        assert_eq!(
            u.generate.to_string(),
            "https://h/proxy/v1/chat/completions"
        );
        assert_eq!(u.models.to_string(), "https://h/proxy/v1/models");
        assert_eq!(u.health.to_string(), "https://h/proxy/health");
        let u = Urls::new(&cfg("http://h/tgi", BackendKind::Tgi)).expect("url");
        assert_eq!(u.generate.to_string(), "http://h/tgi/generate_stream");
        assert_eq!(u.info.to_string(), "http://h/tgi/info");
        let mut c = cfg("http://h/p?api-version=2", BackendKind::OpenAiChat);
        c.endpoint = Some("/openai/deployments/x/chat/completions".into());
        let u = Urls::new(&c).expect("url");
        assert_eq!(
            u.generate.to_string(),
            "http://h/p/openai/deployments/x/chat/completions?api-version=2"
        );
    }

    #[test]
    fn bad_targets_are_clear_errors_without_secrets() {
        for t in [
            "h:8000",
            "ftp://h",
            "http://",
            "not a url",
            "",
            "http://127.0.0.1:99999",
            "http://h:0",
            "http://h:",
            "http://[::1]:70000",
        ] {
            assert!(
                matches!(
                    Urls::new(&cfg(t, BackendKind::Tgi)),
                    Err(Error::InvalidTarget { .. })
                ),
                "{t}"
            );
        }
        let e = Urls::new(&cfg("http://u:hunter2@h", BackendKind::Tgi))
            .expect_err("credentials refused")
            .to_string();
        assert!(!e.contains("hunter2") && e.contains("--api-key"), "{e}");
        for ok in ["http://h:1", "http://[::1]", "http://[::1]:65535/v1"] {
            assert!(Urls::new(&cfg(ok, BackendKind::Tgi)).is_ok(), "{ok}");
        }
        let mut c = cfg("http://h", BackendKind::Tgi);
        c.endpoint = Some("http://other/x".into());
        assert!(matches!(Urls::new(&c), Err(Error::InvalidEndpoint { .. })));
    }

    #[test]
    fn completions_body_fields() {
        let c = cfg("http://h", BackendKind::OpenAiCompletions);
        assert_eq!(
            body(&c, Some("m"), Some(32)),
            json!({"model": "m", "prompt": "Say \"hi\"\n", "max_tokens": 32, "stream": true,
                   "stream_options": {"include_usage": true}, "ignore_eos": true, "min_tokens": 32})
        );
        // No fixed length: no length fields and no extensions; no model: no model field.
        assert_eq!(
            body(&c, None, None),
            json!({"prompt": "Say \"hi\"\n", "stream": true, "stream_options": {"include_usage": true}})
        );
    }

    #[test]
    fn chat_body_fields_and_strict_mode() {
        let mut c = cfg("http://h", BackendKind::OpenAiChat);
        c.vllm_extensions = false;
        assert_eq!(
            body(&c, Some("m"), Some(8)),
            json!({"model": "m", "messages": [{"role": "user", "content": "Say \"hi\"\n"}],
                   "max_completion_tokens": 8, "stream": true,
                   "stream_options": {"include_usage": true}})
        );
    }

    #[test]
    fn anthropic_body_fields() {
        let mut c = cfg("http://h", BackendKind::AnthropicMessages);
        assert_eq!(
            body(&c, Some("m"), Some(8)),
            json!({"model": "m", "messages": [{"role": "user", "content": "Say \"hi\"\n"}],
                   "max_tokens": 8, "stream": true, "ignore_eos": true, "min_tokens": 8})
        );
        c.vllm_extensions = false;
        c.stream = false;
        assert_eq!(
            body(&c, None, None),
            json!({"messages": [{"role": "user", "content": "Say \"hi\"\n"}],
                   "max_tokens": ANTHROPIC_DEFAULT_MAX_TOKENS, "stream": false})
        );
        let u = Urls::new(&c).expect("url");
        assert_eq!(u.generate.to_string(), "http://h/v1/messages");
    }

    #[test]
    fn tgi_body_fields() {
        let c = cfg("http://h", BackendKind::Tgi);
        assert_eq!(
            body(&c, Some("ignored"), Some(8)),
            json!({"inputs": "Say \"hi\"\n", "parameters": {"max_new_tokens": 8, "details": true},
                   "stream": true})
        );
    }

    #[test]
    fn extra_body_merges_recursively_and_wins() {
        let mut c = cfg("http://h", BackendKind::OpenAiCompletions);
        c.extra_body = Some(
            json!({"temperature": 0, "stream_options": {"continuous_usage_stats": true},
                                   "max_tokens": 5}),
        );
        let b = body(&c, None, Some(32));
        assert_eq!(b["temperature"], json!(0));
        assert_eq!(
            b["stream_options"],
            json!({"include_usage": true, "continuous_usage_stats": true})
        );
        assert_eq!(b["max_tokens"], json!(5));
        c.extra_body = Some(json!([1]));
        assert!(matches!(
            BodyBuilder::new(&c),
            Err(Error::InvalidExtraBody { kind: "an array" })
        ));
    }
}
