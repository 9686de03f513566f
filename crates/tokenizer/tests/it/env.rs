//! The Hub configuration read from the environment. This test sets process-wide variables and
//! shares its process with the other modules of this binary: they never depend on them (`hub`
//! passes an explicit `HubConfig`, `builtin` resolves an existing path, which ignores it), and
//! std serializes `set_var` with every `std::env` read. A new test here that reads these
//! variables must not assume their values.

use std::path::PathBuf;

use bench_tokenizer::hub::HubConfig;
use bench_tokenizer::Tokenizer;

#[test]
fn environment_variables_are_honoured() {
    let home = bench_test_support::fresh(env!("CARGO_TARGET_TMPDIR"), "tok-env");
    std::fs::write(home.join("token"), "hf_from_file\n").expect("token");
    std::env::set_var("HF_HOME", &home);
    std::env::remove_var("HF_HUB_CACHE");
    std::env::remove_var("HUGGINGFACE_HUB_CACHE");
    std::env::remove_var("HF_TOKEN");
    std::env::remove_var("HUGGING_FACE_HUB_TOKEN");
    std::env::remove_var("HF_TOKEN_PATH");
    std::env::set_var("HF_ENDPOINT", "http://127.0.0.1:9/");
    std::env::set_var("HF_HUB_OFFLINE", "1");
    let c = HubConfig::from_env();
    assert_eq!(c.endpoint, "http://127.0.0.1:9");
    assert_eq!(c.cache, home.join("hub"));
    assert_eq!(c.token.as_deref(), Some("hf_from_file"));
    assert!(c.offline);

    // A model placed in the cache the way huggingface_hub lays it out resolves offline.
    let snap = home.join("hub/models--acme--cached/snapshots/abc");
    std::fs::create_dir_all(&snap).expect("mkdir");
    std::fs::write(snap.join("tokenizer.json"), bench_tokenizer::BUILTIN_JSON).expect("write");
    let t = Tokenizer::resolve("acme/cached").expect("from cache");
    assert_eq!(t.name(), "acme/cached");
    // Not cached and offline: an error naming the model, without any network attempt.
    let e = Tokenizer::resolve("acme/absent").expect_err("offline");
    assert!(e.to_string().contains("acme/absent"), "{e}");

    std::env::set_var("HF_TOKEN", "hf_env");
    std::env::set_var("HF_HUB_CACHE", "/elsewhere");
    std::env::set_var("HF_HUB_OFFLINE", "0");
    let c = HubConfig::from_env();
    assert_eq!(c.token.as_deref(), Some("hf_env"));
    assert_eq!(c.cache, PathBuf::from("/elsewhere"));
    assert!(!c.offline);
    let _ = std::fs::remove_dir_all(&home);
}
