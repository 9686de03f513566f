//! Request bodies of the generation endpoints, parsed leniently (unknown fields ignored) into
//! what the simulator needs.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use serde::Deserialize;

use bench_tokenizer::Tokenizer;

/// The generation endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Completions,
    Chat,
    TgiStream,
    Tgi,
    Responses,
    /// Anthropic's `/v1/messages` ([`messages`]).
    Messages,
}

mod messages;

impl Api {
    pub(crate) fn path(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
            Api::TgiStream => "/generate_stream",
            Api::Tgi => "/generate",
            Api::Responses => "/v1/responses",
            Api::Messages => "/v1/messages",
        }
    }

    /// Whether its responses carry the configured reasoning phase (chat, Responses, Messages).
    pub(crate) fn reasons(self) -> bool {
        matches!(self, Api::Chat | Api::Responses | Api::Messages)
    }

    pub(crate) fn is_tgi(self) -> bool {
        matches!(self, Api::TgiStream | Api::Tgi)
    }
}

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub stream: bool,
    pub include_usage: bool,
    pub prompt_tokens: u32,
    /// The output limit (`max_tokens` and friends, or the server default).
    pub limit: u32,
    pub min_tokens: u32,
    pub ignore_eos: bool,
    /// TGI `parameters.details`.
    pub details: bool,
    /// The prompt's token ids (message contents in order), when [`Limits::prompt_ids`] asks.
    pub ids: Vec<u32>,
    /// Images in the prompt (chat `image_url` parts).
    pub images: u32,
    /// Their prompt tokens ([`image_tokens`]), part of `prompt_tokens`.
    pub image_tokens: u32,
}

/// What a list of messages holds: all prompt tokens (text and images), images, image tokens.
#[derive(Debug, Default, Clone, Copy)]
struct MessageTokens {
    tokens: u32,
    images: u32,
    image_tokens: u32,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Prompt<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Texts(#[serde(borrow)] Vec<Cow<'a, str>>),
    Ids(Vec<u32>),
    IdLists(Vec<Vec<u32>>),
}

#[derive(Deserialize)]
struct CompletionRequest<'a> {
    #[serde(borrow, default)]
    prompt: Option<Prompt<'a>>,
    max_tokens: Option<u32>,
    min_tokens: Option<u32>,
    ignore_eos: Option<bool>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Parts(#[serde(borrow)] Vec<Part<'a>>),
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    /// Chat: `{"type": "image_url", "image_url": {"url": ...}}`.
    #[serde(borrow, default)]
    image_url: Option<ImageRef<'a>>,
}

#[derive(Deserialize)]
struct ImageRef<'a> {
    #[serde(borrow)]
    url: Cow<'a, str>,
}

/// Side of the square patch one image token covers, in pixels.
pub const IMAGE_PATCH: u32 = 28;
/// Prompt tokens every image costs on top of its patches (its start and end markers).
pub const IMAGE_EXTRA_TOKENS: u32 = 2;

/// The prompt tokens of a `width` x `height` image: `ceil(width / 28) * ceil(height / 28) + 2`
/// (docs/simulator.md, "Images").
pub fn image_tokens(width: u32, height: u32) -> u32 {
    width.div_ceil(IMAGE_PATCH) * height.div_ceil(IMAGE_PATCH) + IMAGE_EXTRA_TOKENS
}

/// The size of the image of a `data:` URL; other URLs are refused (the simulator fetches
/// nothing).
fn data_url_size(url: &str) -> Result<(u32, u32), String> {
    use base64::Engine as _;
    let payload = url
        .strip_prefix("data:")
        .and_then(|r| r.split_once(";base64,"))
        .map(|(_, p)| p)
        .ok_or("the simulator takes images as data: URLs (base64) only")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .map_err(|e| format!("an image data: URL is not base64: {e}"))?;
    bench_core::image_size(&bytes).ok_or_else(|| "an image is not a PNG or JPEG".to_string())
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
}

#[derive(Deserialize)]
struct ChatRequest<'a> {
    #[serde(borrow)]
    messages: Vec<Message<'a>>,
    max_tokens: Option<u32>,
    max_completion_tokens: Option<u32>,
    min_tokens: Option<u32>,
    ignore_eos: Option<bool>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ResponsesInput<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Messages(#[serde(borrow)] Vec<Message<'a>>),
}

#[derive(Deserialize)]
struct ResponsesRequest<'a> {
    #[serde(borrow)]
    input: ResponsesInput<'a>,
    max_output_tokens: Option<u32>,
    min_tokens: Option<u32>,
    ignore_eos: Option<bool>,
    stream: Option<bool>,
}

#[derive(Deserialize, Default)]
struct TgiParameters {
    max_new_tokens: Option<u32>,
    details: Option<bool>,
    ignore_eos: Option<bool>,
    min_new_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct TgiRequest<'a> {
    #[serde(borrow)]
    inputs: Cow<'a, str>,
    #[serde(default)]
    parameters: Option<TgiParameters>,
}

/// Server-side limits that shape parsing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub default_max_tokens: u32,
    pub max_model_len: u32,
    /// Tokenize prompts into ids (for the prefix cache) rather than only count them.
    pub prompt_ids: bool,
    /// Refuse body fields the OpenAI API does not define.
    pub strict: bool,
}

/// The body fields of OpenAI's completions API.
const OPENAI_COMPLETIONS_FIELDS: &[&str] = &[
    "model",
    "prompt",
    "max_tokens",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "n",
    "stop",
    "seed",
    "logprobs",
    "echo",
    "presence_penalty",
    "frequency_penalty",
    "best_of",
    "logit_bias",
    "suffix",
    "user",
];

/// The body fields of OpenAI's chat completions API.
const OPENAI_CHAT_FIELDS: &[&str] = &[
    "model",
    "messages",
    "max_tokens",
    "max_completion_tokens",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "n",
    "stop",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "response_format",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "metadata",
    "store",
];

/// Strict mode: the first top-level field of `body` the OpenAI API does not define, as
/// OpenAI's 400 message names it.
fn unknown_field(api: Api, body: &[u8]) -> Result<(), String> {
    let known = match api {
        Api::Completions => OPENAI_COMPLETIONS_FIELDS,
        Api::Chat => OPENAI_CHAT_FIELDS,
        Api::TgiStream | Api::Tgi | Api::Responses | Api::Messages => return Ok(()),
    };
    let v: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    match v.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!("Unrecognized request argument supplied: {k}")),
        None => Ok(()),
    }
}

/// Counts prompt tokens with the serving tokenizer, remembering the counts of recent prompts:
/// a tokenizer pass costs far more than answering a zero-delay request, and benchmarks often
/// send the same prompts again (each benchmark of a sweep re-reads its dataset).
#[derive(Debug)]
pub(crate) struct PromptCounter {
    tok: Tokenizer,
    cache: Mutex<HashMap<u64, u32>>,
}

/// Distinct prompts remembered; the cache is emptied when full.
const CACHE_ENTRIES: usize = 8192;

impl PromptCounter {
    pub(crate) fn new(tok: Tokenizer) -> Self {
        Self {
            tok,
            cache: Mutex::new(HashMap::with_capacity(CACHE_ENTRIES)),
        }
    }

    /// The token ids of `text` (not cached: the prefix cache needs them all).
    pub(crate) fn ids(&self, text: &str) -> Vec<u32> {
        self.tok.encode(text)
    }

    pub(crate) fn count(&self, text: &str) -> u32 {
        if text.is_empty() {
            return 0;
        }
        // Keyed by a 64-bit SipHash of the text plus its length: a collision between two
        // prompts of a run is vanishingly unlikely.
        let mut h = std::hash::DefaultHasher::new();
        text.hash(&mut h);
        let key = h.finish() ^ (text.len() as u64).rotate_left(48);
        if let Ok(c) = self.cache.lock() {
            if let Some(n) = c.get(&key) {
                return *n;
            }
        }
        let n = u32::try_from(self.tok.count(text)).unwrap_or(u32::MAX);
        if let Ok(mut c) = self.cache.lock() {
            if c.len() >= CACHE_ENTRIES {
                c.clear();
            }
            c.insert(key, n);
        }
        n
    }
}

/// Counts prompt pieces, keeping their ids when the prefix cache needs them.
struct Measure<'a> {
    tok: &'a PromptCounter,
    ids: Option<Vec<u32>>,
}

impl Measure<'_> {
    fn text(&mut self, t: &str) -> u32 {
        match &mut self.ids {
            Some(ids) => {
                let v = self.tok.ids(t);
                ids.extend_from_slice(&v);
                u32::try_from(v.len()).unwrap_or(u32::MAX)
            }
            None => self.tok.count(t),
        }
    }

    fn token_ids(&mut self, v: &[u32]) -> u32 {
        if let Some(ids) = &mut self.ids {
            ids.extend_from_slice(v);
        }
        u32::try_from(v.len()).unwrap_or(u32::MAX)
    }
}

/// Parses the body of a generation request. `Err` carries the message of a 400 answer.
pub(crate) fn parse(
    api: Api,
    body: &[u8],
    tok: &PromptCounter,
    limits: Limits,
) -> Result<Parsed, String> {
    if limits.strict {
        unknown_field(api, body)?;
    }
    let mut m = Measure {
        tok,
        ids: limits.prompt_ids.then(Vec::new),
    };
    let json = |e: serde_json::Error| format!("invalid JSON body: {e}");
    let mut p = match api {
        Api::Completions => {
            completion(serde_json::from_slice(body).map_err(json)?, &mut m, limits)?
        }
        Api::Chat => chat(serde_json::from_slice(body).map_err(json)?, &mut m, limits)?,
        Api::Responses => responses(serde_json::from_slice(body).map_err(json)?, &mut m, limits)?,
        Api::Messages => {
            messages::parse(serde_json::from_slice(body).map_err(json)?, &mut m, limits)?
        }
        Api::TgiStream | Api::Tgi => tgi(
            api,
            serde_json::from_slice(body).map_err(json)?,
            &mut m,
            limits,
        ),
    };
    p.ids = m.ids.unwrap_or_default();
    if p.limit == 0 {
        return Err("the output limit (max_tokens) must be at least 1".into());
    }
    let total = u64::from(p.prompt_tokens) + u64::from(p.limit);
    if total > u64::from(limits.max_model_len) {
        return Err(format!(
            "This model's maximum context length is {} tokens. However, you requested {} tokens ({} in the messages, {} in the completion).",
            limits.max_model_len, total, p.prompt_tokens, p.limit
        ));
    }
    Ok(p)
}

/// The fields the completions and chat requests share.
struct OpenAiShared {
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    min_tokens: Option<u32>,
    ignore_eos: Option<bool>,
}

impl OpenAiShared {
    /// The request's [`Parsed`]: `prompt_tokens` counted, `limit` its output limit field when
    /// given (the server default otherwise).
    fn parsed(self, prompt_tokens: u32, limit: Option<u32>, limits: Limits) -> Parsed {
        Parsed {
            stream: self.stream.unwrap_or(false),
            include_usage: self
                .stream_options
                .and_then(|o| o.include_usage)
                .unwrap_or(false),
            prompt_tokens,
            limit: limit.unwrap_or(limits.default_max_tokens),
            min_tokens: self.min_tokens.unwrap_or(0),
            ignore_eos: self.ignore_eos.unwrap_or(false),
            details: false,
            ids: Vec::new(),
            images: 0,
            image_tokens: 0,
        }
    }
}

const ONE_PROMPT: &str = "the simulator serves one prompt per request; send a string";

fn completion(
    r: CompletionRequest<'_>,
    m: &mut Measure<'_>,
    limits: Limits,
) -> Result<Parsed, String> {
    let prompt_tokens = match r.prompt {
        None => return Err("`prompt` is required".into()),
        Some(Prompt::Text(t)) => m.text(&t),
        Some(Prompt::Texts(v)) => match v.as_slice() {
            [t] => m.text(t),
            _ => return Err(ONE_PROMPT.into()),
        },
        Some(Prompt::Ids(ids)) => m.token_ids(&ids),
        Some(Prompt::IdLists(v)) => match v.as_slice() {
            [ids] => m.token_ids(ids),
            _ => return Err(ONE_PROMPT.into()),
        },
    };
    let shared = OpenAiShared {
        stream: r.stream,
        stream_options: r.stream_options,
        min_tokens: r.min_tokens,
        ignore_eos: r.ignore_eos,
    };
    Ok(shared.parsed(prompt_tokens, r.max_tokens, limits))
}

/// The prompt tokens of a list of messages, counted as the loader counts: the message
/// contents, without a chat template.
fn message_tokens(messages: &[Message<'_>], m: &mut Measure<'_>) -> Result<MessageTokens, String> {
    let mut c = MessageTokens::default();
    for msg in messages {
        match &msg.content {
            None => {}
            Some(Content::Text(t)) => c.tokens = c.tokens.saturating_add(m.text(t)),
            Some(Content::Parts(parts)) => {
                for p in parts {
                    if let Some(t) = &p.text {
                        c.tokens = c.tokens.saturating_add(m.text(t));
                    }
                    if let Some(img) = &p.image_url {
                        let (w, h) = data_url_size(&img.url)?;
                        let n = image_tokens(w, h);
                        c.images += 1;
                        c.image_tokens = c.image_tokens.saturating_add(n);
                        c.tokens = c.tokens.saturating_add(n);
                    }
                }
            }
        }
    }
    Ok(c)
}

fn chat(r: ChatRequest<'_>, m: &mut Measure<'_>, limits: Limits) -> Result<Parsed, String> {
    if r.messages.is_empty() {
        return Err("`messages` must not be empty".into());
    }
    let c = message_tokens(&r.messages, m)?;
    let shared = OpenAiShared {
        stream: r.stream,
        stream_options: r.stream_options,
        min_tokens: r.min_tokens,
        ignore_eos: r.ignore_eos,
    };
    let limit = r.max_completion_tokens.or(r.max_tokens);
    let mut p = shared.parsed(c.tokens, limit, limits);
    (p.images, p.image_tokens) = (c.images, c.image_tokens);
    Ok(p)
}

/// `/v1/responses`: `input` a string or a list of messages; the usage always comes with the
/// final event (no `stream_options`).
fn responses(
    r: ResponsesRequest<'_>,
    m: &mut Measure<'_>,
    limits: Limits,
) -> Result<Parsed, String> {
    let prompt_tokens = match &r.input {
        ResponsesInput::Text(t) => m.text(t),
        ResponsesInput::Messages(v) if v.is_empty() => {
            return Err("`input` must not be empty".into())
        }
        ResponsesInput::Messages(v) => message_tokens(v, m)?.tokens,
    };
    let shared = OpenAiShared {
        stream: r.stream,
        stream_options: None,
        min_tokens: r.min_tokens,
        ignore_eos: r.ignore_eos,
    };
    let mut p = shared.parsed(prompt_tokens, r.max_output_tokens, limits);
    p.include_usage = true;
    Ok(p)
}

fn tgi(api: Api, r: TgiRequest<'_>, m: &mut Measure<'_>, limits: Limits) -> Parsed {
    let params = r.parameters.unwrap_or_default();
    Parsed {
        stream: api == Api::TgiStream,
        include_usage: false,
        prompt_tokens: m.text(&r.inputs),
        limit: params.max_new_tokens.unwrap_or(limits.default_max_tokens),
        min_tokens: params.min_new_tokens.unwrap_or(0),
        ignore_eos: params.ignore_eos.unwrap_or(false),
        details: params.details.unwrap_or(false),
        ids: Vec::new(),
        images: 0,
        image_tokens: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        default_max_tokens: 16,
        max_model_len: 1000,
        prompt_ids: false,
        strict: false,
    };

    #[test]
    fn strict_mode_refuses_fields_openai_does_not_define() {
        let tok = &PromptCounter::new(Tokenizer::builtin());
        let strict = Limits { strict: true, ..L };
        let ok = br#"{"model":"x","prompt":"hi","max_tokens":5,"stream":true,"temperature":0}"#;
        assert!(parse(Api::Completions, ok, tok, strict).is_ok());
        let vllm = br#"{"model":"x","prompt":"hi","max_tokens":5,"min_tokens":5}"#;
        assert_eq!(
            parse(Api::Completions, vllm, tok, strict).err().as_deref(),
            Some("Unrecognized request argument supplied: min_tokens")
        );
        let chat = br#"{"messages":[{"role":"user","content":"hi"}],"ignore_eos":true}"#;
        assert!(parse(Api::Chat, chat, tok, strict)
            .err()
            .is_some_and(|e| e.contains("ignore_eos")));
        assert!(parse(Api::Chat, chat, tok, L).is_ok(), "lenient by default");
    }

    #[test]
    fn completions_fields_and_unknown_fields() {
        let t = Tokenizer::builtin();
        let tok = &PromptCounter::new(t.clone());
        let body = br#"{"model":"x","prompt":"hello \"world\"","max_tokens":5,"ignore_eos":true,
            "stream":true,"stream_options":{"include_usage":true},"frobnicate":[1,2]}"#;
        let p = parse(Api::Completions, body, tok, L).expect("ok");
        assert!(p.stream && p.include_usage && p.ignore_eos);
        assert_eq!(p.limit, 5);
        assert_eq!(p.prompt_tokens as usize, t.count("hello \"world\""));
        let p = parse(Api::Completions, br#"{"prompt":[1,2,3]}"#, tok, L).expect("ok");
        assert_eq!((p.prompt_tokens, p.limit, p.stream), (3, 16, false));
        assert!(parse(Api::Completions, br#"{"prompt":["a","b"]}"#, tok, L).is_err());
        assert!(parse(
            Api::Completions,
            br#"{"prompt":"a","max_tokens":0}"#,
            tok,
            L
        )
        .is_err());
        assert!(parse(
            Api::Completions,
            br#"{"prompt":"a","max_tokens":"x"}"#,
            tok,
            L
        )
        .is_err());
        assert!(parse(
            Api::Completions,
            br#"{"prompt":"a","max_tokens":5000}"#,
            tok,
            L
        )
        .is_err());
        assert!(parse(Api::Completions, br#"{"prompt":"a""#, tok, L).is_err());
        assert!(parse(Api::Completions, b"{}", tok, L).is_err());
    }

    #[test]
    fn chat_counts_message_contents() {
        let t = Tokenizer::builtin();
        let tok = &PromptCounter::new(t.clone());
        let body = br#"{"messages":[{"role":"system","content":"be brief"},
            {"role":"user","content":[{"type":"text","text":"tell me"},{"type":"image_url"}]}],
            "max_tokens":9,"max_completion_tokens":7,"min_tokens":7}"#;
        let p = parse(Api::Chat, body, tok, L).expect("ok");
        assert_eq!(p.limit, 7);
        assert_eq!(p.min_tokens, 7);
        assert_eq!(
            p.prompt_tokens as usize,
            t.count("be brief") + t.count("tell me")
        );
        assert!(parse(Api::Chat, br#"{"messages":[]}"#, tok, L).is_err());
    }

    #[test]
    fn completions_and_chat_read_their_shared_fields_alike() {
        let tok = &PromptCounter::new(Tokenizer::builtin());
        let shared = r#""stream":true,"stream_options":{"include_usage":true},"min_tokens":3,"ignore_eos":true"#;
        let c = format!(r#"{{"prompt":"hi",{shared}}}"#);
        let h = format!(r#"{{"messages":[{{"role":"user","content":"hi"}}],{shared}}}"#);
        let c = parse(Api::Completions, c.as_bytes(), tok, L).expect("completions");
        let h = parse(Api::Chat, h.as_bytes(), tok, L).expect("chat");
        assert_eq!(c, h);
        assert!(c.stream && c.include_usage && c.ignore_eos && !c.details);
        assert_eq!((c.min_tokens, c.limit), (3, 16));
        let bare = parse(Api::Chat, br#"{"messages":[{"content":"hi"}]}"#, tok, L).expect("ok");
        assert!(!bare.stream && !bare.include_usage && !bare.ignore_eos);
        assert_eq!(bare.min_tokens, 0);
    }

    #[test]
    fn tgi_parameters() {
        let t = Tokenizer::builtin();
        let tok = &PromptCounter::new(t.clone());
        let body = br#"{"inputs":"a b c","parameters":{"max_new_tokens":4,"details":true,"do_sample":true}}"#;
        let p = parse(Api::TgiStream, body, tok, L).expect("ok");
        assert!(p.stream && p.details);
        assert_eq!(p.limit, 4);
        let p = parse(Api::Tgi, br#"{"inputs":"x"}"#, tok, L).expect("ok");
        assert!(!p.stream && !p.details);
        assert_eq!(p.limit, 16);
    }

    #[test]
    fn images_cost_their_closed_form_and_only_data_urls_are_taken() {
        assert_eq!(image_tokens(28, 28), 1 + IMAGE_EXTRA_TOKENS);
        assert_eq!(image_tokens(29, 1), 2 + IMAGE_EXTRA_TOKENS);
        assert_eq!(image_tokens(512, 512), 19 * 19 + IMAGE_EXTRA_TOKENS);
        let body = br#"{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}"#;
        let tok = PromptCounter::new(bench_tokenizer::Tokenizer::builtin());
        let e = parse(Api::Chat, body, &tok, L).expect_err("a remote URL");
        assert!(e.contains("data: URLs"), "{e}");
    }
}
