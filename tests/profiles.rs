//! Every shipped profile (profiles/) and example (examples/) loads and resolves.

use std::path::Path;

fn yaml_files(dir: &str) -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_profile_and_example_resolves() {
    let files: Vec<_> = yaml_files("profiles")
        .into_iter()
        .chain(yaml_files("examples"))
        .collect();
    assert!(
        files.len() >= 8,
        "profiles and examples are there: {files:?}"
    );
    for f in files {
        let s = bench_cli::settings::resolve_file(&f)
            .unwrap_or_else(|e| panic!("{}: {e:#}", f.display()));
        assert!(!s.profile.is_empty(), "{}", f.display());
    }
}

#[test]
fn seed_profiles_say_what_the_seeds_did() {
    let p = |name: &str| {
        bench_cli::settings::resolve_file(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("profiles")
                .join(name),
        )
        .unwrap_or_else(|e| panic!("{name}: {e:#}"))
    };
    let g = p("guidellm-sweep.yaml");
    assert_eq!(g.profile.len(), 10);
    assert_eq!(g.limits.max_seconds, Some(30.0));
    assert_eq!(g.data, "prompt_tokens=256,output_tokens=128");
    let v = p("vllm-poisson-rate4-sharegpt.yaml");
    assert_eq!(v.rate, vec![4.0]);
    assert_eq!(v.rate_type.name(), "poisson");
    for n in ["seq80", "10000", "128k"] {
        let b = p(&format!("vllm-num-prompts-{n}.yaml"));
        assert_eq!(b.profile.len(), 12, "1..2048");
        assert_eq!(b.limits.max_seconds, None, "a burst ends when all finished");
    }
    assert_eq!(p("tgi-book.yaml").backend.name(), "tgi");
    let c = p("chat-sessions.yaml");
    assert_eq!(
        c.think_time,
        bench_core::ThinkTime::Exponential { mean: 5.0 }
    );
    assert!(c.data.starts_with("turns=4,"), "{}", c.data);
}
