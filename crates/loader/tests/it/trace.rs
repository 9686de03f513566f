//! Traces: every format parses with its units; bad files are one-line errors naming the file
//! and line; prompts share prefixes exactly where hash ids agree.

use crate::common;

use std::path::PathBuf;

use bench_core::RequestSpec;
use bench_loader::trace::{scan, TraceReader};
use bench_loader::{DataSpec, Error, Loader, TraceConfig};
use bench_tokenizer::Tokenizer;

fn write(tag: &str, name: &str, body: &str) -> PathBuf {
    let p = common::temp_dir(tag).join(name);
    std::fs::write(&p, body).expect("write");
    p
}

fn spec(arg: &str) -> Result<DataSpec, Error> {
    DataSpec::parse(arg, None)
}

fn config(arg: &str) -> TraceConfig {
    match spec(arg).expect("spec") {
        DataSpec::Trace(c) => c,
        other => panic!("not a trace: {other:?}"),
    }
}

fn all(arg: &str) -> Vec<RequestSpec> {
    let mut l =
        Loader::new_verified(spec(arg).expect("spec"), Tokenizer::builtin()).expect("loader");
    let mut v = Vec::new();
    while let Some(r) = l.try_next().expect("next") {
        v.push(r);
    }
    v
}

/// The error of a trace `arg`, whether parsing or loading finds it.
fn error(arg: &str) -> String {
    match spec(arg).and_then(|s| Loader::new(s, Tokenizer::builtin())) {
        Ok(_) => panic!("{arg}: no error"),
        Err(e) => e.to_string(),
    }
}

const MOONCAKE: &str = r#"{"timestamp": 0, "input_length": 40, "output_length": 5, "hash_ids": [1, 2, 3]}
{"timestamp": 250, "input_length": 33, "output_length": 6, "hash_ids": [1, 2, 4]}
{"timestamp": 250, "input_length": 16, "output_length": 7, "hash_ids": [1]}

{"timestamp": 1500, "input_length": 20, "output_length": 8, "hash_ids": [5, 6]}
"#;

#[test]
fn mooncake_rows_and_units() {
    let p = write("mc", "t.jsonl", MOONCAKE);
    let c = config(&format!("trace={},block_size=16", p.display()));
    assert_eq!(
        c.format,
        bench_loader::TraceFormat::Mooncake,
        "recognised by hash_ids"
    );
    let mut r = TraceReader::open(&c).expect("open");
    let mut rows = Vec::new();
    while let Some(row) = r.next_row().expect("row") {
        rows.push((row.line, row.at, row.output_tokens));
    }
    assert_eq!(
        rows,
        vec![
            (1, 0, Some(5)),
            (2, 250_000_000, Some(6)),
            (3, 250_000_000, Some(7)),
            (5, 1_500_000_000, Some(8))
        ]
    );
    // time_unit and start: seconds, and the first second skipped.
    let c = config(&format!(
        "trace={},block_size=16,time_unit=s,start=200",
        p.display()
    ));
    let mut r = TraceReader::open(&c).expect("open");
    let first = r.next_row().expect("row").expect("some");
    assert_eq!((first.line, first.at), (2, 50_000_000_000));
}

#[test]
fn mooncake_block_size_defaults_to_512_and_bailian_to_16() {
    let p = write(
        "bs",
        "t.jsonl",
        "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}\n",
    );
    assert_eq!(config(&format!("trace={}", p.display())).block_size, 512);
    let q = write("bl", "t.jsonl", "{\"chat_id\": 1, \"timestamp\": 0, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [1, 2]}\n");
    let c = config(&format!("trace={}", q.display()));
    assert_eq!(
        (c.format, c.block_size),
        (bench_loader::TraceFormat::Bailian, 16)
    );
    assert_eq!(all(&format!("trace={}", q.display()))[0].prompt_tokens, 20);
    // A given format wins over the first line.
    let c = config(&format!("trace={},format=bailian", p.display()));
    assert_eq!(c.block_size, 16);
}

#[test]
fn azure_dates_are_offsets_from_the_first_row() {
    let p = write(
        "az",
        "azure.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.0000000,396,109\n2023-11-16 18:16:46.6805900,879,20\n",
    );
    let c = config(&format!("trace={}", p.display()));
    assert_eq!(c.format, bench_loader::TraceFormat::Azure);
    let v = all(&format!("trace={}", p.display()));
    let got: Vec<_> = v
        .iter()
        .map(|r| (r.at, r.prompt_tokens, r.output_tokens))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some(0), 374, Some(44)),
            (Some(3_319_410_000), 396, Some(109)),
            (Some(60_000_000_000), 879, Some(20))
        ]
    );
}

#[test]
fn burstgpt_seconds_and_filters() {
    let body = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
                5,ChatGPT,472,18,490,Conversation log\n\
                45,GPT-4,1087,230,1317,Conversation log\n\
                118,ChatGPT,417,0,417,Conversation log\n\
                130.5,ChatGPT,50,20,70,API log\n";
    let p = write("bg", "burst.csv", body);
    let c = config(&format!("trace={}", p.display()));
    assert_eq!(c.format, bench_loader::TraceFormat::Burstgpt);
    let v = all(&format!("trace={}", p.display()));
    // The row with 0 response tokens (a failure) is skipped; offsets from the first row.
    let got: Vec<_> = v.iter().map(|r| (r.at, r.prompt_tokens)).collect();
    assert_eq!(
        got,
        vec![
            (Some(0), 472),
            (Some(40_000_000_000), 1087),
            (Some(125_500_000_000), 50)
        ]
    );
    let v = all(&format!(
        "trace={},model=ChatGPT,log_type=Conversation log",
        p.display()
    ));
    assert_eq!(v.len(), 1);
    let s = scan(
        &config(&format!("trace={},model=ChatGPT", p.display())),
        false,
    )
    .expect("scan");
    assert_eq!((s.rows, s.skipped), (2, 2));
}

#[test]
fn plain_prompts_messages_and_counts() {
    let body = r#"{"timestamp": 0, "prompt": "Hello there, how are you?", "output_length": 12}
{"timestamp": 10, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why is the sky blue?"}]}
{"timestamp": 30.5, "input_length": 64, "output_length": 3}
"#;
    let p = write("pl", "mine.jsonl", body);
    let v = all(&format!("trace={}", p.display()));
    let tk = Tokenizer::builtin();
    assert_eq!(&*v[0].prompt, "Hello there, how are you?");
    assert_eq!(
        v[0].prompt_tokens as usize,
        tk.count("Hello there, how are you?")
    );
    assert_eq!((v[0].at, v[0].output_tokens), (Some(0), Some(12)));
    assert_eq!(&*v[1].prompt, "Be brief.\n\nWhy is the sky blue?");
    assert_eq!((v[1].at, v[1].output_tokens), (Some(10_000_000), None));
    assert_eq!((v[2].at, v[2].prompt_tokens), (Some(30_500_000), 64));
    assert_eq!(tk.count(&v[2].prompt), 64);
}

#[test]
fn bad_files_are_one_line_errors_naming_file_and_line() {
    let cases: &[(&str, &str, &str)] = &[
        ("empty.jsonl", "", "empty file, no rows"),
        ("blank.jsonl", "\n\n", "empty file, no rows"),
        (
            "back.jsonl",
            "{\"timestamp\": 5, \"input_length\": 3, \"hash_ids\": [1]}\n{\"timestamp\": 2, \"input_length\": 3, \"hash_ids\": [1]}\n",
            "line 2: timestamp goes back 3 ms",
        ),
        (
            "neg.jsonl",
            "{\"timestamp\": -1, \"input_length\": 3, \"hash_ids\": [1]}\n",
            "line 1: timestamp must be a number >= 0, got -1",
        ),
        (
            "fit.jsonl",
            "{\"timestamp\": 0, \"input_length\": 3, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": 1025, \"hash_ids\": [1, 2]}\n",
            "line 2: input_length 1025 does not fit 2 hash_ids of 512 tokens (needs 513..=1024",
        ),
        (
            "short.jsonl",
            "{\"timestamp\": 0, \"input_length\": 512, \"hash_ids\": [1, 2]}\n",
            "line 1: input_length 512 does not fit 2 hash_ids",
        ),
        (
            "nolen.jsonl",
            "{\"timestamp\": 0, \"hash_ids\": [1]}\n",
            "line 1: no input_length (format=mooncake needs timestamp, input_length, output_length, hash_ids)",
        ),
        (
            "garbage.jsonl",
            "{\"timestamp\": 0, \"input_length\": 3, \"hash_ids\": [1]}\nnot json\n",
            "line 2: not a JSON record",
        ),
        (
            "delay.jsonl",
            "{\"timestamp\": 0, \"input_length\": 3, \"hash_ids\": [1]}\n{\"delay\": 5, \"input_length\": 3, \"hash_ids\": [1]}\n",
            "line 2: no timestamp, and a delay without a session_id",
        ),
        (
            "unknown.csv",
            "time,prompt_len\n1,2\n",
            "line 1: not a trace format bench knows (columns seen: time, prompt_len); needs mooncake/bailian (timestamp, input_length, output_length, hash_ids)",
        ),
        (
            "azure-date.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\nyesterday,1,1\n",
            "line 3: TIMESTAMP \"yesterday\" is not a date-time",
        ),
        (
            "burst-back.csv",
            "Timestamp,Request tokens,Response tokens\n5,1,1\n4,1,1\n",
            "line 3: timestamp goes back 1000 ms",
        ),
    ];
    for (name, body, want) in cases {
        let p = write("bad", name, body);
        let e = error(&format!("trace={}", p.display()));
        assert!(
            e.starts_with(&format!("trace {}", p.display())),
            "{name}: {e}"
        );
        assert!(e.contains(want), "{name}: {e}");
        assert!(!e.contains('\n'), "{name}: one line: {e}");
    }
    // A forced format whose columns are missing names them.
    let p = write(
        "bad",
        "azure-cols.csv",
        "Timestamp,Request tokens,Response tokens\n5,1,1\n",
    );
    let e = error(&format!("trace={},format=azure", p.display()));
    assert!(
        e.contains("line 1: no column \"TIMESTAMP\" for format=azure (columns: Timestamp, Request tokens, Response tokens; needs TIMESTAMP, ContextTokens, GeneratedTokens)"),
        "{e}"
    );
    // Keys at fault are named.
    let p = write("bad", "ok.jsonl", MOONCAKE);
    for (arg, want) in [
        (
            "time_unit=h",
            "time_unit must be ns, us, ms or s, got \"h\"",
        ),
        ("block_size=0", "block_size must be at least 1"),
        ("start=-3", "start must be seconds >= 0"),
        ("model=x", "model applies to format=burstgpt only"),
        ("format=csv", "format=csv is not a trace format"),
        ("prompt_tokens=5", "prompt_tokens does not apply to a trace"),
        ("input_len=5", "input_len applies to synthetic data"),
        ("start=99999", "no row left to replay"),
    ] {
        let bs = if arg.starts_with("block_size") {
            ""
        } else {
            ",block_size=16"
        };
        let e = error(&format!("trace={},{arg}{bs}", p.display()));
        assert!(e.contains(want), "{arg}: {e}");
    }
    assert!(error("prompt_tokens=5,block_size=3").contains("block_size given without trace"));
    assert!(error("trace=/no/such/trace.jsonl").contains("no such file"));
}

/// Prompts of rows whose hash ids agree on their first `k` blocks are byte-identical for
/// exactly those `k * block_size` tokens, and differ from the next token on.
#[test]
fn prefixes_are_shared_exactly_as_far_as_hash_ids_agree() {
    let bs = 16u32;
    // A tree: 1 -> 2 -> {3, 4}; 1 -> 5 (a sibling of 2); 7 alone; partial last blocks.
    let rows: &[(u32, &[u64])] = &[
        (48, &[1, 2, 3]),
        (40, &[1, 2, 4]),
        (32, &[1, 5]),
        (9, &[1]),
        (48, &[7, 2, 3]),
        (33, &[1, 2, 3]),
    ];
    let body: String = rows
        .iter()
        .enumerate()
        .map(|(i, (n, ids))| {
            format!("{{\"timestamp\": {i}, \"input_length\": {n}, \"output_length\": 1, \"hash_ids\": {ids:?}}}\n")
        })
        .collect();
    let p = write("share", "t.jsonl", &body);
    let arg = format!("trace={},block_size={bs},seed=3", p.display());
    let v = all(&arg);
    let tk = Tokenizer::builtin();
    let ids: Vec<Vec<u32>> = v.iter().map(|r| tk.encode(&r.prompt)).collect();
    for (r, (n, _)) in v.iter().zip(rows) {
        assert_eq!(r.prompt_tokens, *n);
        assert_eq!(tk.count(&r.prompt), *n as usize, "exact count");
    }
    for i in 0..rows.len() {
        for j in 0..rows.len() {
            let agree = rows[i]
                .1
                .iter()
                .zip(rows[j].1)
                .take_while(|(a, b)| a == b)
                .count();
            let common = ids[i]
                .iter()
                .zip(&ids[j])
                .take_while(|(a, b)| a == b)
                .count();
            let shared = (agree as u32 * bs).min(rows[i].0).min(rows[j].0) as usize;
            assert_eq!(common, shared, "rows {i} and {j}: tokens in common");
            // Byte-identical text for the shared tokens.
            let text = tk.decode(&ids[i][..shared]);
            assert!(v[j].prompt.starts_with(&text), "rows {i} and {j}");
        }
    }
    // The same seed gives the same prompts; another seed (a run's fresh salt) shares nothing.
    let again = all(&arg);
    assert_eq!(v, again);
    let other = all(&format!("trace={},block_size={bs},seed=4", p.display()));
    for (a, b) in v.iter().zip(&other) {
        assert_ne!(tk.encode(&a.prompt)[..2], tk.encode(&b.prompt)[..2]);
    }
}

#[test]
fn a_run_salt_replaces_the_seed_unless_given() {
    let p = write("salt", "t.jsonl", MOONCAKE);
    let mut s = spec(&format!("trace={},block_size=16", p.display())).expect("spec");
    let seed = s.salt(99).expect("seed");
    assert_eq!((seed.seed, seed.explicit), (99, false));
    let mut s = spec(&format!("trace={},block_size=16,seed=5", p.display())).expect("spec");
    let seed = s.salt(99).expect("seed");
    assert_eq!((seed.seed, seed.explicit), (5, true));
}

#[test]
fn theoretical_hit_rate_counts_blocks_seen_before() {
    let p = write("hit", "t.jsonl", MOONCAKE);
    let s = scan(
        &config(&format!("trace={},block_size=16", p.display())),
        true,
    )
    .expect("scan");
    // Blocks: [1,2,3] [1,2,4] [1] [5,6] = 9 sent; seen before: 1,2 then 1 = 3.
    assert_eq!((s.rows, s.blocks, s.blocks_seen), (4, 9, 3));
    assert_eq!(s.hit_rate(), Some(3.0 / 9.0));
    assert_eq!(s.duration, 1_500_000_000);
    assert_eq!((s.input_tokens, s.output_tokens), (109, 26));
    assert_eq!(s.input_lengths, vec![40, 33, 16, 20]);
    assert_eq!(s.mean_rate(), Some(3.0 / 1.5));
}

#[test]
fn a_trace_is_replayed_once_not_cycled() {
    let p = write("once", "t.jsonl", MOONCAKE);
    let l = Loader::new(
        spec(&format!("trace={},block_size=16", p.display())).expect("spec"),
        Tokenizer::builtin(),
    )
    .expect("loader")
    .cycle(true);
    assert_eq!(l.count(), 4);
}

#[test]
fn yaml_form_and_format_prefix() {
    let p = write("yaml", "t.jsonl", MOONCAKE);
    let a = DataSpec::from_yaml(&format!(
        "trace: {}\nformat: mooncake\nblock_size: 16\ntime_unit: ms\n",
        p.display()
    ))
    .expect("yaml");
    let b = spec(&format!("mooncake:{}", p.display()));
    assert!(matches!(a, DataSpec::Trace(ref c) if c.block_size == 16));
    assert!(matches!(b, Ok(DataSpec::Trace(ref c)) if c.block_size == 512));
}

#[path = "../../examples/make_traces.rs"]
mod make_traces;

/// The shipped example traces are exactly what `make_traces` writes, each is recognised as its
/// format and replays with exact prompt counts.
#[test]
fn shipped_examples_are_generated_and_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces");
    let tk = Tokenizer::builtin();
    for (name, text) in make_traces::traces() {
        let path = dir.join(name);
        let shipped = std::fs::read_to_string(&path).expect("shipped example");
        assert!(
            shipped == text,
            "{name} differs from what make_traces writes (cargo run -p bench-loader --example make_traces)"
        );
        let c = config(&format!("trace={}", path.display()));
        assert_eq!(c.format.name(), name.split('.').next().unwrap_or(""));
        let s = scan(&c, false).expect("scan");
        let v = all(&format!("trace={}", path.display()));
        assert_eq!(v.len() as u64, s.rows, "{name}");
        for r in &v {
            assert_eq!(tk.count(&r.prompt), r.prompt_tokens as usize, "{name}");
        }
    }
}

/// A row whose `input_length` does not fit its hash ids is an error naming the row (above);
/// under `fit=length` it is sent at the nearest length that fits, its sharing kept, and
/// counted.
#[test]
fn fit_length_moves_only_the_lengths_that_do_not_fit() {
    // block_size 16: row 1 fits (33 in 17..=48), row 2 is too long for 2 blocks (40 > 32),
    // row 3 too short for 3 blocks (20 < 33).
    let body = r#"{"timestamp": 0, "input_length": 33, "output_length": 2, "hash_ids": [1, 2, 3]}
{"timestamp": 10, "input_length": 40, "output_length": 2, "hash_ids": [1, 2]}
{"timestamp": 20, "input_length": 20, "output_length": 2, "hash_ids": [1, 2, 4]}
"#;
    let p = write("fit", "t.jsonl", body);
    let e = error(&format!("trace={},block_size=16", p.display()));
    assert!(
        e.contains("line 2: input_length 40 does not fit 2 hash_ids of 16 tokens (needs 17..=32; block_size= sets the block size, fit=length sends the nearest length that fits)"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    let arg = format!("trace={},block_size=16,fit=length", p.display());
    let v = all(&arg);
    let lens: Vec<u32> = v.iter().map(|r| r.prompt_tokens).collect();
    assert_eq!(lens, vec![33, 32, 33]);
    let tk = Tokenizer::builtin();
    for r in &v {
        assert_eq!(tk.count(&r.prompt), r.prompt_tokens as usize);
    }
    // The prefix sharing is the hash ids': rows 2 and 3 share blocks 1 and 2 (32 tokens) with
    // row 1 byte for byte, and row 2 is those two blocks exactly.
    let prefix = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let two_blocks = &v[1].prompt;
    assert!(v[0].prompt.starts_with(&**two_blocks));
    assert!(v[2].prompt.starts_with(&**two_blocks));
    assert!(prefix(&v[0].prompt, &v[2].prompt) < v[0].prompt.len());
    let s = scan(&config(&arg), false).expect("scan");
    assert_eq!((s.rows, s.fitted, s.input_tokens), (3, 2, 98));
    assert_eq!(
        scan(
            &config(&format!(
                "trace={},block_size=16,fit=error,samples=1",
                p.display()
            )),
            false
        )
        .expect("scan")
        .fitted,
        0
    );
    assert!(error(&format!("trace={},fit=pad", p.display()))
        .contains("fit must be error or length, got \"pad\""));
    assert!(error("prompt_tokens=5,fit=length").contains("fit given without trace"));
}
