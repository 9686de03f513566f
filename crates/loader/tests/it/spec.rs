//! `--data` parsing and validation: guidellm and vLLM keys, YAML, and one-line errors.

use bench_loader::{DataSpec, Error, SyntheticConfig, TokenDist};

fn synth(arg: &str) -> SyntheticConfig {
    match DataSpec::parse(arg, None).expect(arg) {
        DataSpec::Synthetic(c) => c,
        other => panic!("{arg}: {other:?}"),
    }
}

#[test]
fn guidellm_and_vllm_forms() {
    let c = synth("prompt_tokens=256,output_tokens=128");
    assert_eq!(c.prompt, TokenDist::Fixed(256));
    assert_eq!(c.output, Some(TokenDist::Fixed(128)));
    assert_eq!((c.samples, c.prefix_tokens, c.seed), (None, 0, 42));

    let c = synth("prompt_tokens=256,prompt_tokens_stdev=32,prompt_tokens_min=100,prompt_tokens_max=400,output_tokens=64,output_tokens_stdev=8,samples=500,prefix_tokens=32,seed=9");
    assert_eq!(
        c.prompt,
        TokenDist::Normal {
            mean: 256.0,
            stdev: 32.0,
            min: 100,
            max: 400
        }
    );
    assert_eq!(
        c.output,
        Some(TokenDist::Normal {
            mean: 64.0,
            stdev: 8.0,
            min: 1,
            max: u32::MAX
        })
    );
    assert_eq!((c.samples, c.prefix_tokens, c.seed), (Some(500), 32, 9));

    let c = synth("input_len=1000,output_len=100,range_ratio=0.1,prefix_len=50");
    assert_eq!(
        c.prompt,
        TokenDist::Uniform {
            min: 900,
            max: 1100
        }
    );
    assert_eq!(c.output, Some(TokenDist::Uniform { min: 90, max: 110 }));
    assert_eq!(c.prefix_tokens, 50);

    let yaml = "prompt_tokens: 256\noutput_tokens: 128\nprefix_tokens: 16\nseed: 1\n";
    match DataSpec::from_yaml(yaml).expect("yaml") {
        DataSpec::Synthetic(y) => {
            assert_eq!(y.prompt, TokenDist::Fixed(256));
            assert_eq!(y.prefix_tokens, 16);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_name_the_culprit() {
    let cases: &[(&str, &str)] = &[
        ("prompt_tokens=0", "prompt_tokens must be at least 1, got 0"),
        (
            "prompt_tokens=-5",
            "prompt_tokens must be at least 1, got -5",
        ),
        (
            "prompt_tokens=10,output_tokens=0",
            "output_tokens must be at least 1",
        ),
        (
            "prompt_tokens=10,prefix_tokens=-1",
            "prefix_tokens must be at least 0",
        ),
        ("prompt_tokens=10,samples=0", "samples must be at least 1"),
        (
            "prompt_tokens_stdev=5",
            "prompt_tokens_stdev given without prompt_tokens",
        ),
        (
            "prompt_tokens=10,output_tokens_stdev=5",
            "output_tokens_stdev given without output_tokens",
        ),
        (
            "prompt_tokens=10,prompt_tokens_min=20,prompt_tokens_max=5",
            "prompt_tokens_min=20 exceeds prompt_tokens_max=5",
        ),
        (
            "prompt_tokens=10,prompt_tokens_stdev=-1",
            "prompt_tokens_stdev must be a number >= 0",
        ),
        ("range_ratio=0.5", "range_ratio given without input_len"),
        (
            "input_len=10,range_ratio=1.5",
            "range_ratio must be in [0, 1)",
        ),
        (
            "prompt_tokens=10,input_len=10",
            "prompt_tokens and input_len are the same setting",
        ),
        ("prompt_tokens=10,bogus=1", "unknown field `bogus`"),
        (
            "prompt_tokens=10,prompt_tokens=11",
            "prompt_tokens given twice",
        ),
        ("prompt_tokens=10,oops", "expected key=value, got \"oops\""),
        ("output_tokens=10", "needs prompt_tokens"),
        ("prompt_tokens=ten", "prompt_tokens"),
        ("prompt_tokens=10,column=x", "column given without path"),
        (
            "/definitely/missing.jsonl",
            "data file /definitely/missing.jsonl: no such file",
        ),
    ];
    for (arg, want) in cases {
        let e = DataSpec::parse(arg, None).expect_err(arg).to_string();
        assert!(e.contains(want), "{arg}: got {e:?}, want {want:?}");
        assert!(!e.contains('\n'), "{arg}: multi-line error {e:?}");
    }
    let e = DataSpec::from_yaml("prompt_tokens: 10\nprompt_token_stdev: 3\n").expect_err("yaml");
    assert!(matches!(e, Error::Spec(_)));
    assert!(e.to_string().contains("prompt_token_stdev"), "{e}");
}

#[test]
fn file_forms() {
    let dir = bench_test_support::kept(env!("CARGO_TARGET_TMPDIR"), "loader-spec");
    let txt = dir.join("book.txt");
    std::fs::write(&txt, "some text\n").expect("write");
    let p = txt.display().to_string();
    assert!(matches!(
        DataSpec::parse(&p, None).expect("txt"),
        DataSpec::File(_)
    ));
    match DataSpec::parse(&format!("path={p},format=book,prompt_tokens=10000"), None).expect("book")
    {
        DataSpec::Book(b) => assert_eq!(b.prompt_tokens, 10000),
        other => panic!("{other:?}"),
    }
    let e = DataSpec::parse(&format!("path={p},format=book"), None).expect_err("no length");
    assert!(e.to_string().contains("prompt_tokens"), "{e}");
    let e = DataSpec::parse(&format!("path={p},prompt_tokens_stdev=3"), None)
        .expect_err("synthetic key");
    assert!(e.to_string().contains("prompt_tokens_stdev"), "{e}");
    let sg = dir.join("sg.json");
    std::fs::write(&sg, r#"[{"id": "a", "conversations": []}]"#).expect("write");
    assert!(matches!(
        DataSpec::parse(&sg.display().to_string(), None).expect("sharegpt"),
        DataSpec::ShareGpt(_)
    ));
    let _ = std::fs::remove_dir_all(&dir);
}
