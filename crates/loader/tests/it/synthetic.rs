//! Synthetic prompts: exact counts under every tokenizer and distribution, determinism,
//! distinct starts, shared prefixes.

use crate::common;

use bench_loader::{DataSpec, Loader, Mode};
use bench_tokenizer::Tokenizer;

fn take(spec: &str, tk: &Tokenizer, n: usize, verified: bool) -> Vec<bench_core::RequestSpec> {
    let spec = DataSpec::parse(spec, None).expect("spec");
    let loader = if verified {
        Loader::new_verified(spec, tk.clone())
    } else {
        Loader::new(spec, tk.clone())
    }
    .expect("loader");
    loader.take(n).collect()
}

/// Re-encodes each prompt with the real tokenizer.
fn assert_exact(tk: &Tokenizer, specs: &[bench_core::RequestSpec]) {
    for s in specs {
        assert_eq!(
            tk.count(&s.prompt),
            s.prompt_tokens as usize,
            "{}: prompt {:?}",
            tk.name(),
            &s.prompt[..s.prompt.len().min(80)]
        );
    }
}

#[test]
fn modes_per_tokenizer() {
    assert_eq!(
        bench_loader::Composer::new(&Tokenizer::builtin())
            .expect("c")
            .mode(),
        Mode::Proven
    );
    assert_eq!(
        bench_loader::Composer::new(&common::trained_byte_level())
            .expect("c")
            .mode(),
        Mode::Proven
    );
    assert_eq!(
        bench_loader::Composer::new(&common::trained_whitespace())
            .expect("c")
            .mode(),
        Mode::RandomTokens
    );
    if let Some(l) = common::llama3() {
        assert_eq!(
            bench_loader::Composer::new(&l).expect("c").mode(),
            Mode::Proven
        );
    }
}

#[test]
fn exact_counts_for_every_distribution_and_tokenizer() {
    let specs = [
        "prompt_tokens=64,output_tokens=16",
        "prompt_tokens=200,prompt_tokens_stdev=80,prompt_tokens_min=1,prompt_tokens_max=400,output_tokens=32,output_tokens_stdev=10",
        "input_len=120,output_len=20,range_ratio=0.5",
        "prompt_tokens=1",
        "prompt_tokens=50,prefix_tokens=30",
        "input_len=40,prefix_len=7,range_ratio=0.9,seed=3",
    ];
    for tk in common::all() {
        for spec in specs {
            for verified in [false, true] {
                let got = take(spec, &tk, 25, verified);
                assert_eq!(got.len(), 25);
                assert_exact(&tk, &got);
            }
        }
    }
}

#[test]
fn distributions_respect_their_bounds() {
    let tk = Tokenizer::builtin();
    let got = take(
        "prompt_tokens=100,prompt_tokens_stdev=50,prompt_tokens_min=80,prompt_tokens_max=120,output_tokens=10,output_tokens_stdev=100,output_tokens_max=15",
        &tk,
        300,
        false,
    );
    assert!(got.iter().all(|s| (80..=120).contains(&s.prompt_tokens)));
    assert!(
        got.iter().any(|s| s.prompt_tokens == 80) && got.iter().any(|s| s.prompt_tokens == 120)
    );
    assert!(got.iter().all(|s| matches!(s.output_tokens, Some(1..=15))));
    let distinct: std::collections::HashSet<u32> = got.iter().map(|s| s.prompt_tokens).collect();
    assert!(distinct.len() > 20, "normal draws vary: {distinct:?}");

    let got = take(
        "input_len=100,output_len=10,range_ratio=0.2",
        &tk,
        300,
        false,
    );
    assert!(got.iter().all(|s| (80..=120).contains(&s.prompt_tokens)));
    assert!(got.iter().all(|s| matches!(s.output_tokens, Some(8..=12))));

    let got = take("prompt_tokens=77", &tk, 10, false);
    assert!(got
        .iter()
        .all(|s| s.prompt_tokens == 77 && s.output_tokens.is_none()));
}

#[test]
fn deterministic_per_seed() {
    let tk = Tokenizer::builtin();
    let spec = "prompt_tokens=50,prompt_tokens_stdev=20,output_tokens=10,output_tokens_stdev=3";
    let a = take(&format!("{spec},seed=7"), &tk, 40, false);
    let b = take(&format!("{spec},seed=7"), &tk, 40, false);
    let c = take(&format!("{spec},seed=8"), &tk, 40, false);
    assert_eq!(a, b);
    assert_ne!(a, c);
    // The re-encoding path makes the same prompts as the proven path.
    assert_eq!(a, take(&format!("{spec},seed=7"), &tk, 40, true));
}

#[test]
fn prompts_differ_from_their_first_token() {
    for tk in common::all() {
        let starts = bench_loader::Composer::new(&tk).expect("c").starts();
        let n = starts.min(300);
        let got = take("prompt_tokens=20", &tk, n, false);
        let firsts: std::collections::HashSet<u32> =
            got.iter().map(|s| tk.encode(&s.prompt)[0]).collect();
        assert_eq!(firsts.len(), n, "{}: first tokens repeat", tk.name());
    }
    // Beyond the number of distinct first tokens, the first two tokens still differ.
    let tk = Tokenizer::builtin();
    let starts = bench_loader::Composer::new(&tk).expect("c").starts();
    let got = take("prompt_tokens=5", &tk, starts + 200, false);
    let pairs: std::collections::HashSet<Vec<u32>> = got
        .iter()
        .map(|s| tk.encode(&s.prompt)[..2].to_vec())
        .collect();
    assert_eq!(pairs.len(), got.len());
}

#[test]
fn shared_prefix_when_asked() {
    for tk in common::all() {
        let got = take("prompt_tokens=30,prefix_tokens=25,seed=5", &tk, 50, false);
        assert_exact(&tk, &got);
        let enc: Vec<Vec<u32>> = got.iter().map(|s| tk.encode(&s.prompt)).collect();
        assert!(got.iter().all(|s| s.prompt_tokens == 55));
        for e in &enc {
            assert_eq!(e[..25], enc[0][..25], "{}: prefix differs", tk.name());
        }
        if common::trained_whitespace().name() != tk.name() {
            // After the prefix, prompts differ at once.
            let after: std::collections::HashSet<u32> = enc.iter().map(|e| e[25]).collect();
            assert_eq!(after.len(), enc.len(), "{}", tk.name());
        }
    }
}

#[test]
fn samples_end_or_cycle() {
    let tk = Tokenizer::builtin();
    let spec = DataSpec::parse("prompt_tokens=10,samples=3", None).expect("spec");
    let first: Vec<_> = Loader::new(spec.clone(), tk.clone())
        .expect("l")
        .cycle(false)
        .collect();
    assert_eq!(first.len(), 3);
    let cycled: Vec<_> = Loader::new(spec, tk).expect("l").take(7).collect();
    assert_eq!(cycled[..3], first[..]);
    assert_eq!(cycled[3..6], first[..]);
}

#[test]
fn long_prompt_is_exact() {
    for tk in common::all() {
        let got = take("prompt_tokens=20000", &tk, 1, false);
        assert_exact(&tk, &got);
    }
}

#[test]
fn loader_can_move_to_another_thread() {
    fn is_send<T: Send>(_: &T) {}
    let l = Loader::new(
        DataSpec::parse("prompt_tokens=3", None).expect("spec"),
        Tokenizer::builtin(),
    )
    .expect("loader");
    is_send(&l);
    let got = std::thread::spawn(move || l.take(2).count())
        .join()
        .expect("join");
    assert_eq!(got, 2);
}

/// `prefix_count=N` (vLLM's prefix_repetition): prompt `i` starts with prefix `i mod N`, the N
/// prefixes are distinct from their first token, every prompt has exactly `prefix + prompt`
/// tokens, and prompts of one prefix share exactly its `P` tokens.
#[test]
fn prefix_count_gives_n_distinct_prefixes_in_turn() {
    let tk = Tokenizer::builtin();
    let spec = DataSpec::parse(
        "prompt_tokens=12,prefix_tokens=20,prefix_count=3,output_tokens=4,seed=5",
        None,
    )
    .expect("spec");
    let mut l = Loader::new(spec, tk.clone()).expect("loader").cycle(false);
    let ids: Vec<Vec<u32>> = (0..9)
        .map(|_| {
            let s = l.try_next().expect("next").expect("a prompt");
            assert_eq!(s.prompt_tokens, 32);
            let ids = tk.encode(&s.prompt);
            assert_eq!(ids.len(), 32, "{:?}", s.prompt);
            ids
        })
        .collect();
    for i in 0..9 {
        for j in 0..9 {
            if i == j {
                continue;
            }
            let shared = ids[i]
                .iter()
                .zip(&ids[j])
                .take_while(|(a, b)| a == b)
                .count();
            if i % 3 == j % 3 {
                assert_eq!(shared, 20, "prompts {i} and {j} share their prefix exactly");
            } else {
                assert_eq!(shared, 0, "prompts {i} and {j} differ from the first token");
            }
        }
    }
    for bad in [
        "prompt_tokens=8,prefix_count=2",
        "prompt_tokens=8,prefix_tokens=4,prefix_count=0",
    ] {
        assert!(DataSpec::parse(bad, None).is_err(), "{bad}");
    }
}
