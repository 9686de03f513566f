//! examples/kubernetes/ validated offline: every manifest against the Kubernetes API schemas
//! that PyPI's `kubernetes-validate` bundles (installed by .ci/setup into
//! `$BENCH_CACHE/k8s-venv`, default `~/.cache/bench`), strictly (unknown fields refused); a
//! broken copy is refused (the check can fail); and the shard count agrees everywhere it is
//! written (completions, parallelism, BENCH_SHARDS, the merge's wait).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn validator() -> PathBuf {
    let cache = std::env::var_os("BENCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/bench")
        });
    let v = cache.join("k8s-venv/bin/kubernetes-validate");
    assert!(
        v.exists(),
        "{} is missing: run .ci/setup (installs PyPI's kubernetes-validate)",
        v.display()
    );
    v
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kubernetes")
}

fn manifests() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(example())
        .expect("examples/kubernetes")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    v
}

/// Runs the validator on `files`; its success and its output.
fn validate(files: &[PathBuf]) -> (bool, String) {
    let out = Command::new(validator())
        .args(["--strict", "--quiet"])
        .args(files)
        .output()
        .expect("run kubernetes-validate");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn manifests_validate_against_the_kubernetes_schemas() {
    let files = manifests();
    assert!(files.len() >= 4, "{files:?}");
    let (ok, text) = validate(&files);
    assert!(ok, "{text}");
    // The check can fail: a misspelt field is refused.
    let job = std::fs::read_to_string(example().join("shards-job.yaml")).expect("job");
    let broken = common::tmp("k8s", "broken").join("job.yaml");
    std::fs::write(&broken, job.replace("parallelism:", "paralelism:")).expect("write");
    let (ok, text) = validate(&[broken]);
    assert!(!ok, "a misspelt field passed: {text}");
}

/// The integer after `key` on its line in `text`.
fn number_after(text: &str, key: &str) -> u32 {
    let line = text
        .lines()
        .find(|l| l.contains(key))
        .unwrap_or_else(|| panic!("no `{key}`"));
    let rest = &line[line.find(key).unwrap_or_default() + key.len()..];
    let digits: String = rest
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number in {line:?}"))
}

#[test]
fn the_shard_count_agrees_everywhere() {
    let job = std::fs::read_to_string(example().join("shards-job.yaml")).expect("job");
    let merge = std::fs::read_to_string(example().join("merge-job.yaml")).expect("merge");
    let n = number_after(&job, "completions:");
    assert!(n >= 2);
    assert_eq!(number_after(&job, "parallelism:"), n);
    let shards_env = job
        .lines()
        .skip_while(|l| !l.contains("name: BENCH_SHARDS"))
        .nth(1)
        .expect("BENCH_SHARDS value");
    assert_eq!(number_after(shards_env, "value:"), n);
    assert_eq!(number_after(&merge, "wc -l)\" -ge"), n);
    assert!(job.contains("completionMode: Indexed"));
}
