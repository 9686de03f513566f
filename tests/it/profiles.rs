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
        assert!(!s.load.profile.is_empty(), "{}", f.display());
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
    assert_eq!(g.load.profile.len(), 10);
    assert_eq!(g.load.limits.max_seconds, Some(30.0));
    assert_eq!(g.data.data, "prompt_tokens=256,output_tokens=128");
    let v = p("vllm-poisson-rate4-sharegpt.yaml");
    assert_eq!(v.load.rate, vec![4.0]);
    assert_eq!(v.load.rate_type.name(), "poisson");
    for n in ["seq80", "10000", "128k"] {
        let b = p(&format!("vllm-num-prompts-{n}.yaml"));
        assert_eq!(b.load.profile.len(), 12, "1..2048");
        assert_eq!(
            b.load.limits.max_seconds, None,
            "a burst ends when all finished"
        );
    }
    assert_eq!(p("tgi-book.yaml").target.backend.name(), "tgi");
    let c = p("chat-sessions.yaml");
    assert_eq!(
        c.load.think_time,
        bench_core::ThinkTime::Exponential { mean: 5.0 }
    );
    assert!(c.data.data.starts_with("turns=4,"), "{}", c.data.data);
}

/// What a vLLM seed's first result block shows: its sections (by header), the percentiles of
/// its first section, and whether it has the current layout's extra lines.
fn seed_form(seed: &str) -> (Vec<String>, Vec<String>, bool) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("crates/report/tests/seeds")
            .join(seed),
    )
    .expect("seed");
    let start = text.find("============ Serving").expect("a block");
    let block: Vec<&str> = text[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("=========="))
        .collect();
    let sections: Vec<String> = block
        .iter()
        .filter(|l| l.starts_with('-'))
        .map(|l| l.trim_matches('-').to_string())
        .collect();
    let first_name = block
        .iter()
        .find_map(|l| {
            l.strip_prefix("Mean ")
                .and_then(|r| r.split(" (ms)").next())
        })
        .expect("a section")
        .to_string();
    let percentiles: Vec<String> = block
        .iter()
        .filter_map(|l| l.strip_prefix('P'))
        .filter(|r| r.contains(&format!(" {first_name} (ms)")))
        .map(|r| r.split(' ').next().unwrap_or("").to_string())
        .collect();
    let current = block.iter().any(|l| l.starts_with("Failed requests:"));
    (sections, percentiles, current)
}

#[test]
fn every_vllm_seed_has_a_profile_printing_its_sections() {
    for (seed, profiles) in [
        (
            "vllm-poisson-rate4-sharegpt.txt",
            &["vllm-poisson-rate4-sharegpt.yaml"][..],
        ),
        (
            "vllm-percentiles-p50-p99.txt",
            &["vllm-percentiles-p50-p99.yaml"],
        ),
        (
            "vllm-num-prompts-sweep-seq80-10000-128k.txt",
            &[
                "vllm-num-prompts-seq80.yaml",
                "vllm-num-prompts-10000.yaml",
                "vllm-num-prompts-128k.yaml",
            ],
        ),
        ("tgi-book-num-prompts-sweep.txt", &["tgi-book.yaml"]),
    ] {
        let (sections, percentiles, current) = seed_form(seed);
        for name in profiles {
            let s = bench_cli::settings::resolve_file(
                &Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("profiles")
                    .join(name),
            )
            .unwrap_or_else(|e| panic!("{name}: {e:#}"));
            let o = &s.report.vllm_console;
            let ours: Vec<String> = o
                .percentile_metrics
                .iter()
                .map(|m| m.vllm_header().to_string())
                .collect();
            assert_eq!(ours, sections, "{name} vs {seed}: sections");
            let ps: Vec<String> = o
                .metric_percentiles
                .iter()
                .map(|p| format!("{p}"))
                .collect();
            assert_eq!(ps, percentiles, "{name} vs {seed}: percentiles");
            assert_eq!(
                format!("{:?}", o.layout) == "Current",
                current,
                "{name} vs {seed}: layout"
            );
        }
    }
}

/// The shipped plan profile's `plan:` block resolves to what it says.
#[test]
fn the_plan_profile_resolves() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/plan.yaml");
    let file = bench_cli::settings::load_file(&path).expect("profile");
    let plan = bench_cli::settings::plan::resolve(
        &bench_cli::settings::plan::PlanArgs::default(),
        file.plan.as_ref(),
        "profiles/plan.yaml",
    )
    .expect("plan block");
    assert_eq!(plan.params.len(), 2);
    assert_eq!(plan.params[0].values, ["64", "128", "256"]);
    assert_eq!(
        plan.links,
        [("max_num_seqs".into(), "max_concurrency".into())]
    );
    assert_eq!(
        (plan.demand, plan.growth, plan.gpus_per_replica.as_str()),
        (Some(120.0), 1.3, "{tp}")
    );
    assert!(plan.resume);
}
