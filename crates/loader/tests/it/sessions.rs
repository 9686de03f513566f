//! Conversations for sessions: synthetic turns of exact lengths, ShareGPT and `messages` files
//! replayed turn by turn, and the errors.

use crate::common;

use std::path::Path;

use bench_core::ConversationSpec;
use bench_loader::{DataSpec, Loader};
use bench_tokenizer::Tokenizer;

fn loader(arg: &str) -> Loader {
    let spec = DataSpec::parse(arg, None).expect(arg);
    assert!(spec.sessions(), "{arg}");
    let l = Loader::new(spec, Tokenizer::builtin()).expect(arg);
    assert!(l.sessions());
    l
}

fn all(arg: &str) -> Vec<ConversationSpec> {
    let mut l = loader(arg).cycle(false);
    let mut out = Vec::new();
    while let Some(c) = l.try_next_conversation().expect("conversation") {
        out.push(c);
    }
    out
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

#[test]
fn synthetic_turns_have_exact_counts_and_share_the_system_prompt() {
    let tk = Tokenizer::builtin();
    let mut l = loader(
        "turns=3,prompt_tokens=128,prompt_tokens_stdev=20,prompt_tokens_min=100,prompt_tokens_max=150,output_tokens=64,system_prompt_tokens=50,seed=3",
    );
    let mut systems = Vec::new();
    let mut firsts = Vec::new();
    for _ in 0..5 {
        let c = l.try_next_conversation().expect("ok").expect("endless");
        assert_eq!(c.turns.len(), 3);
        assert_eq!((c.system_tokens, tk.count(&c.system)), (50, 50));
        for t in &c.turns {
            assert_eq!(tk.count(&t.prompt), t.prompt_tokens as usize, "{t:?}");
            assert!((100..=150).contains(&t.prompt_tokens));
            assert_eq!(t.output_tokens, Some(64));
        }
        systems.push(c.system.clone());
        firsts.push(c.turns[0].prompt.clone());
    }
    assert!(systems.windows(2).all(|w| w[0] == w[1]));
    firsts.sort();
    firsts.dedup();
    assert_eq!(firsts.len(), 5, "every conversation starts differently");
    // Single requests are not offered for conversation data.
    assert_eq!(l.try_next().expect("ok"), None);
}

#[test]
fn synthetic_samples_count_conversations() {
    let mut l = loader("turns=2,prompt_tokens=16,samples=2");
    let a: Vec<_> = (0..3)
        .map(|_| l.try_next_conversation().expect("ok").expect("some"))
        .collect();
    assert_eq!(a[2], a[0], "the third conversation starts the dataset over");
    assert_ne!(a[1], a[0]);
    assert_eq!(a[0].system_tokens, 0);
    assert!(a[0].system.is_empty());
}

#[test]
fn single_request_data_gives_one_turn_conversations() {
    let spec = DataSpec::parse("prompt_tokens=16,output_tokens=4", None).expect("spec");
    assert!(!spec.sessions());
    let mut l = Loader::new(spec, Tokenizer::builtin()).expect("loader");
    let c = l.try_next_conversation().expect("ok").expect("some");
    assert_eq!(c.turns.len(), 1);
    assert_eq!(c.turns[0].prompt_tokens, 16);
}

#[test]
fn bad_session_keys_are_named() {
    for (arg, key) in [
        ("turns=all,prompt_tokens=10", "turns=all"),
        ("turns=0,prompt_tokens=10", "turns"),
        (
            "prompt_tokens=10,system_prompt_tokens=5",
            "system_prompt_tokens",
        ),
        ("turns=2,prompt_tokens=10,prefix_tokens=5", "prefix_tokens"),
        ("turns=two,prompt_tokens=10", "turns"),
    ] {
        let e = DataSpec::parse(arg, None).expect_err(arg).to_string();
        assert!(e.contains(key), "{arg}: {e}");
    }
}

const SHAREGPT: &str = r#"[
 {"id": "a", "conversations": [
   {"from": "system", "value": "You are terse."},
   {"from": "human", "value": "first question here"},
   {"from": "gpt", "value": "one two three four five"},
   {"from": "human", "value": "second question"},
   {"from": "gpt", "value": "six seven"},
   {"from": "human", "value": "third"},
   {"from": "gpt", "value": "eight"}]},
 {"id": "b", "conversations": [{"from": "gpt", "value": "no human turn"}]},
 {"id": "c", "conversations": [
   {"from": "human", "value": "lonely question"},
   {"from": "gpt", "value": "an answer"},
   {"from": "human", "value": "unanswered"}]}
]"#;

#[test]
fn sharegpt_turns_replay_in_order() {
    let dir = common::temp_dir("sessions-sharegpt");
    let tk = Tokenizer::builtin();
    let p = write(&dir, "sg.json", SHAREGPT);
    let convs = all(&format!("path={p},turns=all"));
    assert_eq!(convs.len(), 2, "b has no user turn");
    let a = &convs[0];
    assert_eq!(&*a.system, "You are terse.");
    assert_eq!(a.system_tokens as usize, tk.count("You are terse."));
    let prompts: Vec<&str> = a.turns.iter().map(|t| &*t.prompt).collect();
    assert_eq!(prompts, ["first question here", "second question", "third"]);
    for (t, reply) in a
        .turns
        .iter()
        .zip(["one two three four five", "six seven", "eight"])
    {
        assert_eq!(t.output_tokens, Some(tk.count(reply) as u32));
        assert_eq!(t.prompt_tokens as usize, tk.count(&t.prompt));
    }
    // An unanswered user message ends the conversation (its output length is unknown).
    assert_eq!(convs[1].turns.len(), 1);
    // turns=N caps; output_tokens fixes every turn's output.
    let capped = all(&format!("path={p},turns=2,output_tokens=7"));
    assert_eq!(capped[0].turns.len(), 2);
    assert_eq!(
        capped[1].turns.len(),
        2,
        "a fixed output length keeps the last turn"
    );
    assert!(capped[0].turns.iter().all(|t| t.output_tokens == Some(7)));
    // Without turns, ShareGPT stays vLLM's first-turn requests.
    let spec = DataSpec::parse(&p, None).expect("spec");
    assert!(!spec.sessions());
}

#[test]
fn jsonl_messages_replay_in_order() {
    let dir = common::temp_dir("sessions-messages");
    let p = write(
        &dir,
        "m.jsonl",
        concat!(
            r#"{"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "bye now"}, {"role": "assistant", "content": "ciao"}]}"#,
            "\n",
            r#"{"messages": [{"role": "user", "content": "only"}, {"role": "assistant", "content": "reply"}]}"#,
            "\n"
        ),
    );
    let convs = all(&format!("path={p},turns=all"));
    assert_eq!(convs.len(), 2);
    assert_eq!(&*convs[0].system, "sys");
    let prompts: Vec<&str> = convs[0].turns.iter().map(|t| &*t.prompt).collect();
    assert_eq!(prompts, ["hello there", "bye now"]);
    let e = DataSpec::parse(&format!("path={p},turns=all,column=x"), None)
        .expect_err("column")
        .to_string();
    assert!(e.contains("column"), "{e}");
}

/// Tools: synthetic definitions of exactly `tool_tokens` each (their whole JSON counted), an
/// exact tool result, the same for every conversation; a file's definitions kept verbatim
/// (canonical JSON); the errors name the key or the file.
#[test]
fn tools_are_exact_shared_and_checked() {
    let tk = Tokenizer::builtin();
    let mut l = loader(
        "turns=2,prompt_tokens=20,output_tokens=4,tools=3,tool_tokens=120,tool_result_tokens=50,seed=5",
    );
    let a = l.try_next_conversation().expect("ok").expect("one");
    let b = l.try_next_conversation().expect("ok").expect("two");
    let t = a.tools.as_ref().expect("tools");
    assert_eq!(t.definitions.len(), 3);
    for (i, d) in t.definitions.iter().enumerate() {
        assert_eq!(tk.count(d), 120, "{d}");
        let v: serde_json::Value = serde_json::from_str(d).expect("json");
        assert_eq!(v.to_string(), **d, "canonical");
        assert_eq!(v["function"]["name"], format!("tool_{i}"));
    }
    assert_eq!(t.definition_tokens, 360);
    assert_eq!((t.result_tokens, tk.count(&t.result)), (50, 50));
    assert_eq!(
        a.tools, b.tools,
        "every conversation carries the same tools"
    );

    let dir = common::temp_dir("sessions-tools");
    let file = write(
        &dir,
        "tools.json",
        r#"[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]"#,
    );
    let c = all(&format!(
        "turns=1,prompt_tokens=8,output_tokens=2,tools_file={file},samples=1"
    ));
    let t = c[0].tools.as_ref().expect("tools");
    let want =
        r#"{"function":{"name":"get_weather","parameters":{"type":"object"}},"type":"function"}"#;
    assert_eq!(&*t.definitions[0], want);
    assert_eq!(t.definition_tokens as usize, tk.count(want));
    assert_eq!(t.result_tokens, 128, "the default result size");

    let bad = write(&dir, "bad.json", r#"[{"type": "function"}]"#);
    for (arg, says) in [
        (
            "prompt_tokens=8,tools=2".to_string(),
            "tools given without turns",
        ),
        (
            "turns=2,prompt_tokens=8,tool_tokens=50".into(),
            "tool_tokens given without tools",
        ),
        (
            "turns=2,prompt_tokens=8,tools=1,tool_tokens=10".into(),
            "tool_tokens=10: a tool definition takes at least",
        ),
        (
            format!("turns=2,prompt_tokens=8,tools_file={bad}"),
            "has no function.name",
        ),
        (
            format!("turns=2,prompt_tokens=8,tools=1,tools_file={file}"),
            "exclude each other",
        ),
    ] {
        let e = DataSpec::parse(&arg, None)
            .and_then(|s| Loader::new(s, Tokenizer::builtin()).map(|_| ()))
            .expect_err(&arg)
            .to_string();
        assert!(e.contains(says), "{arg}: {e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
