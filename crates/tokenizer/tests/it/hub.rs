//! Hub resolution against a loopback server standing in for the Hub (`HF_ENDPOINT`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bench_tokenizer::hub::HubConfig;
use bench_tokenizer::{Error, Tokenizer, BUILTIN_JSON};

/// A one-thread HTTP/1.1 server on 127.0.0.1:0 answering from `route`; records each request's
/// path and Authorization header.
struct FakeHub {
    url: String,
    seen: Seen,
}

/// Requests seen: path and Authorization header.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

type Reply = (u16, Vec<(String, String)>, Vec<u8>);

fn fake_hub(route: fn(&str, &str) -> Reply) -> FakeHub {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let base = url.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut auth = None;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':') {
                    if k.eq_ignore_ascii_case("authorization") {
                        auth = Some(v.trim().to_string());
                    }
                }
            }
            seen2.lock().expect("lock").push((path.clone(), auth));
            let (status, headers, body) = route(&base, &path);
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    FakeHub { url, seen }
}

fn temp_dir(tag: &str) -> PathBuf {
    bench_test_support::fresh(env!("CARGO_TARGET_TMPDIR"), &format!("tok-{tag}"))
}

fn hub_routes(base: &str, path: &str) -> Reply {
    match path {
        // The Hub answers large files with a redirect to its CDN, naming the commit.
        "/acme/tiny-model/resolve/main/tokenizer.json" => (
            302,
            vec![
                ("location".into(), format!("{base}/cdn/blob-1")),
                ("x-repo-commit".into(), "0123456789abcdef".into()),
            ],
            Vec::new(),
        ),
        "/cdn/blob-1" => (200, Vec::new(), BUILTIN_JSON.to_vec()),
        "/acme/gated/resolve/main/tokenizer.json" => (401, Vec::new(), b"{}".to_vec()),
        _ => (404, Vec::new(), b"Entry not found".to_vec()),
    }
}

#[test]
fn downloads_from_endpoint_then_uses_cache() {
    let hub = fake_hub(hub_routes);
    let home = temp_dir("download");
    let mut config = HubConfig {
        endpoint: hub.url.clone(),
        cache: home.join("hub"),
        token: Some("hf_secret".into()),
        offline: false,
    };
    let t = Tokenizer::resolve_with("acme/tiny-model", &config).expect("download");
    assert_eq!(t.name(), "acme/tiny-model");
    assert!(!t.is_builtin());
    assert_eq!(
        t.count(" the server"),
        Tokenizer::builtin().count(" the server")
    );
    {
        let seen = hub.seen.lock().expect("lock");
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen[0].0, "/acme/tiny-model/resolve/main/tokenizer.json");
        assert_eq!(seen[0].1.as_deref(), Some("Bearer hf_secret"));
        assert_eq!(seen[1].0, "/cdn/blob-1");
    }
    // Stored in the huggingface_hub layout.
    let repo = home.join("hub/models--acme--tiny-model");
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/main")).expect("ref"),
        "0123456789abcdef"
    );
    assert_eq!(
        std::fs::read(repo.join("snapshots/0123456789abcdef/tokenizer.json")).expect("file"),
        BUILTIN_JSON
    );
    // Offline now: served from the cache, no new request.
    config.offline = true;
    let again = Tokenizer::resolve_with("acme/tiny-model", &config).expect("cached");
    assert_eq!(again.vocab_size(), t.vocab_size());
    assert_eq!(hub.seen.lock().expect("lock").len(), 2);
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn hub_errors_name_the_model() {
    let hub = fake_hub(hub_routes);
    let home = temp_dir("errors");
    let mut config = HubConfig {
        endpoint: hub.url.clone(),
        cache: home.join("hub"),
        token: None,
        offline: false,
    };
    let e = Tokenizer::resolve_with("acme/missing", &config).expect_err("404");
    assert!(matches!(e, Error::Download { .. }));
    let msg = e.to_string();
    assert!(msg.contains("acme/missing") && msg.contains("404"), "{msg}");

    let msg = Tokenizer::resolve_with("acme/gated", &config)
        .expect_err("401")
        .to_string();
    assert!(msg.contains("HF_TOKEN"), "{msg}");

    config.offline = true;
    let e = Tokenizer::resolve_with("acme/other", &config).expect_err("offline");
    assert!(matches!(e, Error::Offline { .. }), "{e}");
    assert!(e.to_string().contains("HF_HUB_OFFLINE"));

    let e = Tokenizer::resolve_with("no such thing!", &config).expect_err("bad id");
    assert!(matches!(e, Error::Unresolvable(_)), "{e}");
    let e = Tokenizer::resolve_with("./missing/tokenizer.json", &config).expect_err("path");
    assert!(matches!(e, Error::NotFound(_)), "{e}");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn unreachable_endpoint_is_a_clear_error() {
    // Bind then drop to get a loopback port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let home = temp_dir("unreachable");
    let config = HubConfig {
        endpoint: format!("http://127.0.0.1:{port}"),
        cache: home.join("hub"),
        token: None,
        offline: false,
    };
    let msg = Tokenizer::resolve_with("acme/tiny-model", &config)
        .expect_err("refused")
        .to_string();
    assert!(
        msg.contains("acme/tiny-model") && msg.contains("connect"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&home);
}
