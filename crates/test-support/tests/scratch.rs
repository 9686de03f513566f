//! The scratch-directory rule: under the directory cargo gives the tests, named per test
//! process; `kept` keeps what is there, `fresh` empties it.

use bench_test_support::{fresh, kept, scratch_path};

#[test]
fn kept_keeps_and_fresh_empties() {
    let base = env!("CARGO_TARGET_TMPDIR");
    let d = kept(base, "support-selftest");
    assert_eq!(d, scratch_path(base, "support-selftest"));
    assert!(d.starts_with(base));
    assert!(d.ends_with(format!("bench-support-selftest-{}", std::process::id())));
    std::fs::write(d.join("x"), "1").expect("write");
    assert!(kept(base, "support-selftest").join("x").exists());
    assert!(!fresh(base, "support-selftest").join("x").exists());
    assert!(d.is_dir());
}
