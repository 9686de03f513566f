//! The per-event fast path means exactly what the serde_json path means.
//!
//! Events of realistic vLLM / SGLang / OpenAI / TGI shapes are generated with random field
//! order, unknown nested fields, nulls, wrong types, duplicate keys, unicode and escaped strings
//! (lone surrogates included), numbers of every form, whitespace, and truncation or garbage. Each
//! is fed to two recorders, one with the JSON scanner (falling back to serde_json when unsure)
//! and one with serde_json alone, which must agree on everything: progress, outcome, chunks,
//! usage and kept text. The current SSE parser is also checked against the previous one.

#![allow(clippy::unwrap_used, missing_docs)]

mod reference_sse;

use bench_worker::sse::SseParser;
use bench_worker::{BackendKind, Progress, StreamRecorder};
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};

use reference_sse::RefParser;

// ---------------------------------------------------------------------------------------------
// Generators. Every generator yields JSON text (usually valid, sometimes not).

fn ws() -> BoxedStrategy<String> {
    prop_oneof![12 => Just(String::new()), 1 => "[ \t\n\r]{1,3}"].boxed()
}

/// One piece of a JSON string's content.
fn str_piece() -> BoxedStrategy<String> {
    prop_oneof![
        12 => "[a-zA-Z0-9 .,!?_<>/-]{0,8}",
        4 => any::<char>()
            .prop_filter("needs escaping", |c| *c != '"' && *c != '\\' && !c.is_control())
            .prop_map(String::from),
        2 => "[é中ö😀ß]{1,3}",
        3 => prop::sample::select(vec!["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"])
            .prop_map(String::from),
        2 => (0u32..0xD800).prop_map(|n| format!("\\u{n:04x}")),
        1 => (0xE000u32..=0xFFFF).prop_map(|n| format!("\\u{n:04X}")),
        1 => (0x10000u32..=0x10FFFF).prop_map(|c| {
            let c = c - 0x10000;
            format!("\\u{:04x}\\u{:04X}", 0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF))
        }),
        // Rare trouble: invalid UTF-8 (markers replaced by `event`), lone or reversed
        // surrogates, bad escapes, raw control characters.
        1 => prop::sample::select(vec![BAD_UTF8, LONE_LEAD]).prop_map(String::from),
        1 => (0xD800u32..=0xDFFF).prop_map(|n| format!("\\u{n:04x}")),
        1 => prop::sample::select(vec![
            "\\x", "\\u12", "\\uZZZZ", "\t", "\u{1}", "\u{7f}", "\\ud800\\u0041", "\\udc00\\ud800",
            "\\ud83d\\ude00", "\\u0000", "\\U0041",
        ])
        .prop_map(String::from),
    ]
    .boxed()
}

/// Stands for a byte 0xFF in generated text (see [`bad_utf8`]).
const BAD_UTF8: &str = "\u{F8FE}";
/// Stands for a lone UTF-8 lead byte 0xC3.
const LONE_LEAD: &str = "\u{F8FF}";

/// Turns the markers into invalid UTF-8.
fn bad_utf8(text: String) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{F8FE}' => out.push(0xFF),
            '\u{F8FF}' => out.push(0xC3),
            c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

fn json_str() -> BoxedStrategy<String> {
    vec(str_piece(), 0..4)
        .prop_map(|v| format!("\"{}\"", v.concat()))
        .boxed()
}

fn json_num() -> BoxedStrategy<String> {
    prop_oneof![
        4 => any::<u32>().prop_map(|n| n.to_string()),
        2 => any::<u64>().prop_map(|n| n.to_string()),
        2 => any::<i64>().prop_map(|n| n.to_string()),
        2 => any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| f.to_string()),
        2 => "-?(0|[1-9][0-9]{0,25})(\\.[0-9]{1,5})?([eE][+-]?[0-9]{1,4})?",
        1 => prop::sample::select(vec![
            "-0", "0", "00", "01", "1.", ".5", "-", "1e", "1e+", "1e999", "-1e999",
            "18446744073709551615", "18446744073709551616", "4294967296", "1E2", "2.0", "+1",
        ])
        .prop_map(String::from),
    ]
    .boxed()
}

fn key() -> BoxedStrategy<String> {
    prop_oneof![
        8 => "[a-z_]{1,14}".prop_map(|k| format!("\"{k}\"")),
        1 => prop::sample::select(vec![
            "\"text\"", "\"choices\"", "\"usage\"", "\"delta\"", "\"content\"", "\"token\"",
            "\"details\"", "\"prefill\"", "\"special\"", "\"error\"", "\"object\"", "\"message\"",
            "\"ch\\u006fices\"", "\"t\\u0065xt\"", "\"k\\u00e9\"", "\"é\"", "\"\\ud800\"", "\"\"",
        ])
        .prop_map(String::from),
        1 => json_str(),
    ]
    .boxed()
}

/// Any JSON value, nested.
fn any_value() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        json_num(),
        json_str(),
    ];
    leaf.prop_recursive(5, 32, 4, |inner| {
        prop_oneof![
            (vec((ws(), inner.clone(), ws()), 0..4), ws()).prop_map(|(v, w)| {
                let items: Vec<String> = v.into_iter().map(|(a, x, b)| a + &x + &b).collect();
                format!("[{w}{}]", items.join(","))
            }),
            vec((key(), inner), 0..4).prop_flat_map(|kv| object(kv.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A JSON object of `members` (key text, value text), in a random order with random
/// whitespace.
fn object(members: Vec<(String, String)>) -> BoxedStrategy<String> {
    let n = members.len();
    (
        Just(members).prop_shuffle(),
        vec((ws(), ws(), ws(), ws()), n..=n),
        ws(),
    )
        .prop_map(|(members, spaces, w)| {
            let parts: Vec<String> = members
                .into_iter()
                .zip(spaces)
                .map(|((k, v), (a, b, c, d))| format!("{a}{k}{b}:{c}{v}{d}"))
                .collect();
            format!("{{{w}{}}}", parts.join(","))
        })
        .boxed()
}

/// Members `(name, value)` of which each known one is present or not, plus unknown ones; now
/// and then a known field twice.
fn members(
    known: Vec<(&'static str, BoxedStrategy<String>)>,
) -> BoxedStrategy<Vec<(String, String)>> {
    let fields: Vec<BoxedStrategy<Option<(String, String)>>> = known
        .into_iter()
        .map(|(name, value)| {
            proptest::option::weighted(0.7, value.prop_map(move |v| (format!("\"{name}\""), v)))
                .boxed()
        })
        .collect();
    (
        fields,
        vec((key(), any_value()), 0..3),
        proptest::option::weighted(0.03, any::<prop::sample::Index>()),
    )
        .prop_map(|(fields, unknown, dup)| {
            let mut out: Vec<(String, String)> = fields.into_iter().flatten().collect();
            if let (Some(i), false) = (dup, out.is_empty()) {
                let d = i.get(&out).clone();
                out.push(d);
            }
            out.extend(unknown);
            out
        })
        .boxed()
}

fn obj_of(known: Vec<(&'static str, BoxedStrategy<String>)>) -> BoxedStrategy<String> {
    members(known).prop_flat_map(object).boxed()
}

/// A value of the expected kind mostly; null or anything now and then.
fn mostly(expected: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![12 => expected, 2 => Just("null".to_owned()), 1 => any_value()].boxed()
}

fn text() -> BoxedStrategy<String> {
    prop_oneof![
        1 => Just("\"\"".to_owned()),
        6 => json_str(),
        2 => "[a-z ]{1,8}".prop_map(|t| format!("\" {t}\"")),
    ]
    .boxed()
}

fn count() -> BoxedStrategy<String> {
    prop_oneof![8 => (0u32..5000).prop_map(|n| n.to_string()), 1 => json_num()].boxed()
}

fn openai_delta() -> BoxedStrategy<String> {
    obj_of(vec![
        ("role", mostly(Just("\"assistant\"".to_owned()).boxed())),
        ("content", mostly(text())),
        ("reasoning_content", mostly(text())),
        ("reasoning", mostly(text())),
        ("tool_calls", any_value()),
    ])
}

fn openai_choice() -> BoxedStrategy<String> {
    obj_of(vec![
        ("index", json_num()),
        ("text", mostly(text())),
        ("delta", mostly(openai_delta())),
        ("message", mostly(openai_delta())),
        ("logprobs", mostly(any_value())),
        (
            "finish_reason",
            mostly(
                prop::sample::select(vec!["\"stop\"", "\"length\"", "\"\"", "\"st\\u006fp\""])
                    .prop_map(String::from)
                    .boxed(),
            ),
        ),
        ("stop_reason", mostly(any_value())),
        ("matched_stop", any_value()),
    ])
}

fn openai_usage() -> BoxedStrategy<String> {
    obj_of(vec![
        ("prompt_tokens", mostly(count())),
        ("completion_tokens", mostly(count())),
        ("total_tokens", count()),
        ("prompt_tokens_details", any_value()),
        ("completion_tokens_details", mostly(completion_details())),
    ])
}

fn completion_details() -> BoxedStrategy<String> {
    obj_of(vec![
        ("reasoning_tokens", mostly(count())),
        ("accepted_prediction_tokens", count()),
    ])
}

fn openai_event() -> BoxedStrategy<String> {
    let choices = (vec((ws(), openai_choice()), 0..3), ws())
        .prop_map(|(v, w)| {
            let items: Vec<String> = v.into_iter().map(|(a, c)| a + &c).collect();
            format!("[{}{w}]", items.join(","))
        })
        .boxed();
    obj_of(vec![
        ("id", json_str()),
        (
            "object",
            mostly(
                prop::sample::select(vec![
                    "\"chat.completion.chunk\"",
                    "\"text_completion\"",
                    "\"error\"",
                    "\"e\\u0072ror\"",
                    "\"errors\"",
                ])
                .prop_map(String::from)
                .boxed(),
            ),
        ),
        ("created", json_num()),
        ("model", json_str()),
        ("system_fingerprint", mostly(json_str())),
        ("choices", mostly(choices)),
        ("usage", mostly(openai_usage())),
        (
            "error",
            prop_oneof![
                6 => Just("null".to_owned()),
                1 => json_str(),
                1 => obj_of(vec![("message", json_str()), ("code", json_num())]),
            ]
            .boxed(),
        ),
        ("message", mostly(json_str())),
    ])
}

fn tgi_token() -> BoxedStrategy<String> {
    obj_of(vec![
        ("id", json_num()),
        ("text", mostly(text())),
        ("logprob", json_num()),
        (
            "special",
            prop_oneof![
                10 => Just("false".to_owned()),
                4 => Just("true".to_owned()),
                1 => Just("null".to_owned()),
                1 => any_value(),
            ]
            .boxed(),
        ),
    ])
}

fn tgi_event() -> BoxedStrategy<String> {
    let prefill = vec(
        (ws(), prop_oneof![3 => tgi_token(), 1 => any_value()]),
        0..4,
    )
    .prop_map(|v| {
        let items: Vec<String> = v.into_iter().map(|(a, t)| a + &t).collect();
        format!("[{}]", items.join(","))
    })
    .boxed();
    let details = obj_of(vec![
        (
            "finish_reason",
            prop::sample::select(vec!["\"length\"", "\"eos_token\""])
                .prop_map(String::from)
                .boxed(),
        ),
        ("generated_tokens", mostly(count())),
        ("seed", mostly(json_num())),
        ("prefill", mostly(prefill)),
        ("tokens", any_value()),
        ("best_of_sequences", any_value()),
    ]);
    obj_of(vec![
        ("index", json_num()),
        ("token", mostly(tgi_token())),
        ("generated_text", mostly(text())),
        (
            "details",
            prop_oneof![3 => Just("null".to_owned()), 2 => details, 1 => any_value()].boxed(),
        ),
        ("top_tokens", any_value()),
        (
            "error",
            prop_oneof![8 => Just("null".to_owned()), 1 => json_str()].boxed(),
        ),
        ("error_type", json_str()),
    ])
}

/// An event of any backend's shape, possibly damaged.
fn event() -> BoxedStrategy<Vec<u8>> {
    let doc = prop_oneof![
        4 => openai_event(),
        3 => tgi_event(),
        1 => any_value(),
        1 => Just("[DONE]".to_owned()),
    ];
    (doc, ws(), ws(), damage())
        .prop_map(|(d, a, b, damage)| damage.apply(bad_utf8(format!("{a}{d}{b}"))))
        .boxed()
}

#[derive(Debug, Clone)]
enum Damage {
    None,
    Truncate(prop::sample::Index),
    Replace(prop::sample::Index, u8),
    Insert(prop::sample::Index, u8),
}

impl Damage {
    fn apply(&self, mut b: Vec<u8>) -> Vec<u8> {
        match self {
            Damage::None => {}
            Damage::Truncate(i) => b.truncate(i.index(b.len() + 1)),
            Damage::Replace(i, c) => {
                if !b.is_empty() {
                    let at = i.index(b.len());
                    b[at] = *c;
                }
            }
            Damage::Insert(i, c) => b.insert(i.index(b.len() + 1), *c),
        }
        b
    }
}

fn damage() -> BoxedStrategy<Damage> {
    let byte = prop_oneof![
        3 => prop::sample::select(b"{}[],:\"\\ 0-en".to_vec()),
        1 => any::<u8>(),
    ];
    prop_oneof![
        12 => Just(Damage::None),
        1 => any::<prop::sample::Index>().prop_map(Damage::Truncate),
        1 => (any::<prop::sample::Index>(), byte.clone()).prop_map(|(i, c)| Damage::Replace(i, c)),
        1 => (any::<prop::sample::Index>(), byte).prop_map(|(i, c)| Damage::Insert(i, c)),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// The comparison.

#[derive(Debug, PartialEq)]
struct Seen {
    progress: Vec<Progress>,
    end: Option<bench_core::Outcome>,
    chunks: Vec<bench_core::Chunk>,
    usage: (Option<u32>, Option<u32>),
    usage_reasoning: Option<u32>,
    reasoning_events: u32,
    text: Option<String>,
    reasoning_text: Option<String>,
}

fn snapshot(r: &StreamRecorder, progress: Vec<Progress>, end: Option<bench_core::Outcome>) -> Seen {
    Seen {
        progress,
        end,
        chunks: r.chunks().to_vec(),
        usage: r.usage(),
        usage_reasoning: r.usage_reasoning(),
        reasoning_events: r.reasoning_events(),
        text: r.text().map(str::to_owned),
        reasoning_text: r.reasoning_text().map(str::to_owned),
    }
}

/// Feeds `pieces` to a recorder (and ends the body if it is still open).
fn run(
    backend: BackendKind,
    keep_text: bool,
    json_reply: bool,
    fast: bool,
    pieces: &[Vec<u8>],
) -> (Seen, u64) {
    let mut r = StreamRecorder::new(backend, keep_text, json_reply).with_fast_path(fast);
    let mut progress = Vec::new();
    let mut end = None;
    for (i, p) in pieces.iter().enumerate() {
        let step = r.on_data(Bytes::copy_from_slice(p), 10 * i as u64 + 10);
        let stop = step != Progress::More;
        progress.push(step);
        if stop {
            break;
        }
    }
    if progress.last().is_none_or(|p| *p == Progress::More) {
        end = Some(r.on_end(1_000_000));
    }
    let scanned = r.scanned_events();
    (snapshot(&r, progress, end), scanned)
}

/// One event as an SSE frame: each line of the JSON text as a `data:` line (a `\r` cannot be
/// carried in SSE and is left out of this form).
fn sse_frame(doc: &[u8]) -> Option<Vec<u8>> {
    if doc.contains(&b'\r') {
        return None;
    }
    let mut out = Vec::new();
    for line in doc.split(|&c| c == b'\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.push(b'\n');
    Some(out)
}

const BACKENDS: [BackendKind; 3] = [
    BackendKind::OpenAiCompletions,
    BackendKind::OpenAiChat,
    BackendKind::Tgi,
];

/// Asserts both paths agree on `doc` read as an SSE event and as a JSON body, for every
/// backend; returns how many of those runs the scanner took.
fn check_event(doc: &[u8]) -> Result<u64, TestCaseError> {
    let mut scanned = 0;
    for backend in BACKENDS {
        for keep_text in [false, true] {
            let mut forms: Vec<(bool, Vec<Vec<u8>>)> = vec![(true, vec![doc.to_vec()])];
            if let Some(frame) = sse_frame(doc) {
                forms.push((false, vec![frame]));
            }
            for (json_reply, pieces) in forms {
                let (fast, n) = run(backend, keep_text, json_reply, true, &pieces);
                let (slow, m) = run(backend, keep_text, json_reply, false, &pieces);
                prop_assert_eq!(m, 0);
                prop_assert_eq!(
                    &fast,
                    &slow,
                    "{:?} keep_text={} json_reply={} event {:?}",
                    backend,
                    keep_text,
                    json_reply,
                    String::from_utf8_lossy(doc)
                );
                scanned += n;
            }
        }
    }
    Ok(scanned)
}

/// Runs `cases` generated cases of `strategy` through `check`; returns the sum of what it
/// returned.
fn run_cases<T: std::fmt::Debug>(
    cases: u32,
    strategy: BoxedStrategy<T>,
    check: impl Fn(&T) -> Result<u64, TestCaseError>,
) -> u64 {
    let total = std::cell::Cell::new(0u64);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |v| {
        total.set(total.get() + check(&v)?);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    total.get()
}

/// The core property: one event, every backend, both body forms. Also counts how often the
/// scanner answered, so that the property cannot hold by the scanner always declining.
#[test]
fn fast_path_agrees_with_serde_on_generated_events() {
    let _cpu = crate::common::cpu_heavy_lock_blocking();
    let cases = 2000;
    let scanned = run_cases(cases, event(), |d| check_event(d));
    // Each case runs up to 12 recorders; a realistic share of the events must be scanned.
    assert!(
        scanned > u64::from(cases),
        "the scanner took only {scanned} runs of {cases} cases"
    );
}

/// Only undamaged, shape-correct events: the scanner must take nearly all of them.
#[test]
fn realistic_events_take_the_fast_path() {
    let samples: &[(&str, BackendKind)] = &[
        (
            r#"{"id":"cmpl-1","object":"text_completion","created":1732250000,"model":"m","choices":[{"index":0,"text":" hi","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}"#,
            BackendKind::OpenAiCompletions,
        ),
        (
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
            BackendKind::OpenAiChat,
        ),
        (
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" w\u00f6rld \"q\" \ud83d\ude00\n"},"logprobs":null,"finish_reason":"length","stop_reason":null}]}"#,
            BackendKind::OpenAiChat,
        ),
        (
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}"#,
            BackendKind::OpenAiChat,
        ),
        (
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2,"completion_tokens_details":{"reasoning_tokens":1,"accepted_prediction_tokens":0}}}"#,
            BackendKind::OpenAiChat,
        ),
        (
            r#"{"id":"1","object":"chat.completion.chunk","created":1,"model":"qwen","choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":"Let me think","tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}"#,
            BackendKind::OpenAiChat,
        ),
        (
            r#"{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning":"hmm"},"finish_reason":null,"native_finish_reason":null}],"system_fingerprint":"fp"}"#,
            BackendKind::OpenAiChat,
        ),
        (
            r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"All at once.","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}"#,
            BackendKind::OpenAiChat,
        ),
        (
            r#"{"index":1,"token":{"id":22172,"text":" Hello","logprob":-0.1,"special":false},"generated_text":null,"details":null,"top_tokens":null}"#,
            BackendKind::Tgi,
        ),
        (
            r#"{"index":2,"token":{"id":2,"text":"</s>","logprob":-0.2,"special":true},"generated_text":" Hello","details":{"finish_reason":"eos_token","generated_tokens":2,"seed":null,"prefill":[{"id":1,"text":"<s>","logprob":null}],"tokens":[]}}"#,
            BackendKind::Tgi,
        ),
        (
            r#"{"generated_text":"whole","details":{"finish_reason":"length","generated_tokens":1,"seed":null,"prefill":[],"tokens":[{"id":3,"text":"whole","logprob":-1e-3,"special":false}]}}"#,
            BackendKind::Tgi,
        ),
    ];
    for (doc, backend) in samples {
        for keep_text in [false, true] {
            let pieces = vec![sse_frame(doc.as_bytes()).unwrap()];
            let (fast, n) = run(*backend, keep_text, false, true, &pieces);
            let (slow, _) = run(*backend, keep_text, false, false, &pieces);
            assert_eq!(fast, slow, "{doc}");
            assert_eq!(n, 1, "not scanned: {doc}");
        }
    }
}

/// Whole streams of generated events (with `[DONE]` now and then), cut into arbitrary body
/// pieces: both paths agree after every piece.
#[test]
fn fast_path_agrees_with_serde_on_chunked_streams() {
    let _cpu = crate::common::cpu_heavy_lock_blocking();
    let stream = (vec(event(), 1..6), vec(any::<prop::sample::Index>(), 0..8)).boxed();
    run_cases(300, stream, |(events, cuts)| {
        let mut body = Vec::new();
        for e in events {
            if let Some(f) = sse_frame(e) {
                body.extend_from_slice(&f);
            }
        }
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(body.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces = Vec::new();
        let mut last = 0;
        for p in points {
            pieces.push(body[last..p].to_vec());
            last = p;
        }
        pieces.push(body[last..].to_vec());
        let mut scanned = 0;
        for backend in BACKENDS {
            for keep_text in [false, true] {
                let (fast, n) = run(backend, keep_text, false, true, &pieces);
                let (slow, _) = run(backend, keep_text, false, false, &pieces);
                prop_assert_eq!(fast, slow, "{:?}", backend);
                scanned += n;
            }
        }
        Ok(scanned)
    });
}

// ---------------------------------------------------------------------------------------------
// The SSE parser against its previous implementation.

fn sse_bytes() -> BoxedStrategy<Vec<u8>> {
    let line = prop_oneof![
        4 => event().prop_map(|d| [b"data: ".as_slice(), &d].concat()),
        2 => prop::sample::select(vec![
            &b"data:x"[..], b"data", b"data: ", b"event: error", b"event:message", b": keep-alive",
            b"id: 7", b"retry: 10", b"", b"", b"data:  two spaces", b"dat", b":",
        ])
        .prop_map(<[u8]>::to_vec),
        1 => vec(any::<u8>(), 0..12),
    ];
    let end = prop::sample::select(vec![&b"\n"[..], b"\r\n", b"\r", b"\n\n", b"\r\n\r\n"]);
    vec((line, end), 0..12)
        .prop_map(|v| {
            v.into_iter()
                .flat_map(|(l, e)| [l, e.to_vec()].concat())
                .collect()
        })
        .boxed()
}

/// The current parser, with owned and with lent events, and the previous parser agree on any
/// input cut at any points.
#[test]
fn sse_parser_agrees_with_the_previous_one() {
    let _cpu = crate::common::cpu_heavy_lock_blocking();
    let case = (sse_bytes(), vec(any::<prop::sample::Index>(), 0..8)).boxed();
    run_cases(1000, case, |(input, cuts)| {
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
        points.sort_unstable();
        let mut pieces = Vec::new();
        let mut last = 0;
        for p in points {
            pieces.push(Bytes::copy_from_slice(&input[last..p]));
            last = p;
        }
        pieces.push(Bytes::copy_from_slice(&input[last..]));

        type Ev = (Option<Vec<u8>>, Vec<u8>);
        let owned = |ev: bench_worker::sse::SseEvent| -> Ev {
            (ev.event.map(|e| e.to_vec()), ev.data.to_vec())
        };
        let mut want: Vec<Result<Ev, String>> = Vec::new();
        let mut r = RefParser::with_limit(300);
        'a: for p in &pieces {
            r.feed(p.clone());
            loop {
                match r.next_event() {
                    Ok(Some(ev)) => want.push(Ok(owned(ev))),
                    Ok(None) => break,
                    Err(e) => {
                        want.push(Err(e.to_string()));
                        break 'a;
                    }
                }
            }
        }
        if !matches!(want.last(), Some(Err(_))) {
            loop {
                match r.finish() {
                    Ok(Some(ev)) => want.push(Ok(owned(ev))),
                    Ok(None) => break,
                    Err(e) => {
                        want.push(Err(e.to_string()));
                        break;
                    }
                }
            }
        }

        for lent in [false, true] {
            let mut got: Vec<Result<Ev, String>> = Vec::new();
            let mut p = SseParser::with_limit(300);
            'b: for piece in &pieces {
                p.feed(piece.clone());
                loop {
                    let next = if lent {
                        p.next_event_ref()
                            .map(|o| o.map(|ev| (ev.event.map(<[u8]>::to_vec), ev.data.to_vec())))
                    } else {
                        p.next_event().map(|o| o.map(owned))
                    };
                    match next {
                        Ok(Some(ev)) => got.push(Ok(ev)),
                        Ok(None) => break,
                        Err(e) => {
                            got.push(Err(e.to_string()));
                            break 'b;
                        }
                    }
                }
            }
            if !matches!(got.last(), Some(Err(_))) {
                loop {
                    match p.finish() {
                        Ok(Some(ev)) => got.push(Ok(owned(ev))),
                        Ok(None) => break,
                        Err(e) => {
                            got.push(Err(e.to_string()));
                            break;
                        }
                    }
                }
            }
            prop_assert_eq!(&got, &want, "lent={}", lent);
        }
        Ok(0)
    });
}

/// The generators are not degenerate: they produce some valid events of each backend's shape.
#[test]
fn generators_produce_valid_events() {
    let _cpu = crate::common::cpu_heavy_lock_blocking();
    let mut runner = TestRunner::deterministic();
    let mut valid = 0;
    for _ in 0..200 {
        let doc = openai_event().new_tree(&mut runner).unwrap().current();
        valid += usize::from(serde_json::from_str::<serde_json::Value>(&doc).is_ok());
        let doc = tgi_event().new_tree(&mut runner).unwrap().current();
        valid += usize::from(serde_json::from_str::<serde_json::Value>(&doc).is_ok());
    }
    assert!(valid > 100, "{valid} valid of 400");
}

// ---------------------------------------------------------------------------------------------
// The template path: events that repeat the previous event's shape with another text.

/// Event shapes as (before the text, after the text): servers repeat one per stream.
const SHAPES: &[(&str, &str)] = &[
    (
        r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":""#,
        r#"","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
    ),
    (
        r#"{"id":"cmpl-1","object":"text_completion","created":2,"model":"m","choices":[{"index":0,"text":""#,
        r#"","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
    ),
    (
        r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":""#,
        r#"","logprobs":null,"finish_reason":"length","stop_reason":null}]}"#,
    ),
    (
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""#,
        r#""},"logprobs":null,"finish_reason":null}]}"#,
    ),
    (
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":""#,
        r#"","content":null},"finish_reason":null}],"usage":null}"#,
    ),
    (
        r#"{"id":"c","choices":[{"index":0,"text":""#,
        r#"","delta":{"content":"x"}}]}"#,
    ),
    (
        r#"{"id":"c","choices":[{"index":0,"text":""#,
        r#""}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
    ),
    (r#"{"object":"error","message":""#, r#""}"#),
    (r#"{"error":{"message":""#, r#""}}"#),
    (r#"{"choices":[{"text":""#, r#""},{"text":""}]}"#),
    (r#"{"choices":[{"text":""#, r#""}], "choices":null}"#),
];

/// The bytes between the quotes of a JSON string: mostly plain text, sometimes what the
/// template must refuse (escapes, a raw quote or control byte, invalid UTF-8, nothing).
fn string_content() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        8 => "[a-z ]{1,6}".prop_map(String::into_bytes),
        2 => prop::sample::select(vec![" é", "ü", "😀", " 中文", "\u{7f}", "/"]).prop_map(|s| s.as_bytes().to_vec()),
        2 => prop::sample::select(vec![r#"\""#, r"\\", r"\n", r"\u00e9", r"\ud83d\ude00", r"\ud800", r"\x"])
            .prop_map(|s| s.as_bytes().to_vec()),
        1 => Just(Vec::new()),
        1 => prop::sample::select(vec![&b"\""[..], b"\x01", b"\n", b"a\"b", b"\xff", b"\xc3", b"}"])
            .prop_map(<[u8]>::to_vec),
    ]
    .boxed()
}

/// Streams of events that mostly keep one shape and change text, now and then another shape:
/// both paths agree after every event, and the template path is really taken.
#[test]
fn template_path_agrees_with_serde_on_repeated_shapes() {
    let _cpu = crate::common::cpu_heavy_lock_blocking();
    let ev = (0..SHAPES.len(), string_content());
    let shaped = prop_oneof![6 => Just(None), 1 => (0..SHAPES.len()).prop_map(Some)];
    let stream = (ev, vec((shaped, string_content()), 1..30)).boxed();
    let templated = std::cell::Cell::new(0u64);
    run_cases(400, stream, |((first, text0), rest)| {
        let mut shape = *first;
        let mut pieces = Vec::new();
        for (s, text) in std::iter::once((None, text0)).chain(rest.iter().map(|(s, t)| (*s, t))) {
            if let Some(s) = s {
                shape = s;
            }
            let (pre, suf) = SHAPES[shape];
            let doc = [pre.as_bytes(), text, suf.as_bytes()].concat();
            if let Some(f) = sse_frame(&doc) {
                pieces.push(f);
            }
        }
        for backend in BACKENDS {
            for keep_text in [false, true] {
                let mut fast = StreamRecorder::new(backend, keep_text, false);
                let mut slow = StreamRecorder::new(backend, keep_text, false).with_fast_path(false);
                for (i, p) in pieces.iter().enumerate() {
                    let at = 10 * i as u64 + 10;
                    let a = fast.on_data(Bytes::copy_from_slice(p), at);
                    let b = slow.on_data(Bytes::copy_from_slice(p), at);
                    prop_assert_eq!(&a, &b, "{:?} keep_text={} event {}", backend, keep_text, i);
                    prop_assert_eq!(fast.chunks(), slow.chunks());
                    prop_assert_eq!(fast.usage(), slow.usage());
                    prop_assert_eq!(fast.text(), slow.text());
                    prop_assert_eq!(fast.reasoning_text(), slow.reasoning_text());
                    prop_assert_eq!(fast.reasoning_events(), slow.reasoning_events());
                    if a != Progress::More {
                        break;
                    }
                }
                prop_assert_eq!(fast.on_end(1_000_000), slow.on_end(1_000_000));
                templated.set(templated.get() + fast.templated_events());
            }
        }
        Ok(0)
    });
    assert!(
        templated.get() > 1000,
        "the template path was taken only {} times",
        templated.get()
    );
}

/// A stream as the simulator and vLLM send it: every token event after the first goes through
/// the template, and the record is the one serde_json makes.
#[test]
fn a_realistic_stream_is_read_through_the_template() {
    let (pre, suf) = SHAPES[0];
    let mut body = Vec::new();
    for i in 0..128 {
        body.extend_from_slice(&sse_frame(format!("{pre} t{i}{suf}").as_bytes()).unwrap());
    }
    let last = r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":32,"completion_tokens":128,"total_tokens":160}}"#;
    body.extend_from_slice(&sse_frame(last.as_bytes()).unwrap());
    body.extend_from_slice(b"data: [DONE]\n\n");
    for keep_text in [false, true] {
        let mut fast = StreamRecorder::new(BackendKind::OpenAiCompletions, keep_text, false);
        let mut slow = StreamRecorder::new(BackendKind::OpenAiCompletions, keep_text, false)
            .with_fast_path(false);
        let a = fast.on_data(Bytes::copy_from_slice(&body), 5);
        let b = slow.on_data(Bytes::copy_from_slice(&body), 5);
        assert_eq!(a, b);
        assert_eq!(fast.chunks(), slow.chunks());
        assert_eq!(fast.chunks().len(), 128);
        assert_eq!(fast.usage(), (Some(32), Some(128)));
        assert_eq!(fast.text(), slow.text());
        assert_eq!(fast.scanned_events(), 129);
        assert_eq!(fast.templated_events(), 127);
    }
}
