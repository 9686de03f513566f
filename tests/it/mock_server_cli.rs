//! `bench mock-server` as a user runs it: prints its address, serves HTTP/1.1 and h2c, rejects
//! bad flags with exit code 2.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;

use std::time::Duration;

use common::mock_server as start;

fn http1_post(url: &str, path: &str, body: &str) -> String {
    let addr = url.strip_prefix("http://").expect("http url");
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out
}

#[test]
fn prints_its_address_and_streams_over_http1() {
    let (_server, url) = start(&["--port", "0", "--step-base-ms", "1"]);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let out = http1_post(
        &url,
        "/v1/completions",
        r#"{"prompt":"hi","max_tokens":4,"ignore_eos":true,"stream":true}"#,
    );
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    assert!(out.contains("text/event-stream"));
    assert_eq!(out.matches("\"text\":").count(), 4, "{out}");
    assert!(out.contains("data: [DONE]"));
    let out = http1_post(
        &url,
        "/generate_stream",
        r#"{"inputs":"hi","parameters":{"max_new_tokens":3,"ignore_eos":true,"details":true}}"#,
    );
    assert_eq!(out.matches("data:{\"index\"").count(), 3, "{out}");
    assert!(out.contains("\"generated_tokens\":3"));
}

#[test]
fn serves_h2_prior_knowledge() {
    let (_server, url) = start(&["--port", "0", "--zero-delay"]);
    let addr = url.strip_prefix("http://").expect("http url");
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    // The HTTP/2 connection preface, then an empty SETTINGS frame.
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .expect("preface");
    s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).expect("settings");
    // The server answers with its own SETTINGS frame (type 4) on stream 0.
    let mut head = [0u8; 9];
    s.read_exact(&mut head).expect("server settings");
    assert_eq!(head[3], 4, "frame type {head:?}");
    assert_eq!(&head[5..9], &[0, 0, 0, 0]);
}

#[test]
fn bad_flags_exit_with_2_and_name_the_culprit() {
    let out = common::bench_command()
        .args(["mock-server", "--port", "0", "--reset-rate", "1.5"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("faults.reset"), "{err}");
    let out = common::bench_command()
        .args(["mock-server", "--config", "/nonexistent/sim.yaml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/sim.yaml"));
}

/// Replica settings out of range are one line on stderr, exit 2, naming the setting (and, for
/// a policy, the value and the choices).
#[test]
fn bad_replica_flags_exit_with_2_in_one_line() {
    for (args, wants) in [
        (&["--replicas", "0"][..], &["`replicas`", "got 0"][..]),
        (
            &["--balance", "fastest"],
            &["--balance", "`fastest`", "round-robin", "least-outstanding"],
        ),
    ] {
        let out = common::bench_command()
            .args(["mock-server", "--port", "0"])
            .args(args)
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        for want in wants {
            assert!(err.contains(want), "{want} not in {err}");
        }
    }
}

/// The binary's jemalloc keeps freed pages 30 s before returning them (`.cargo/config.toml`;
/// docs/performance.md, "Allocator"): jemalloc itself confirms the options it was
/// built with and set.
#[test]
fn keeps_freed_pages_for_thirty_seconds() {
    let out = common::bench_command()
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", "confirm_conf:true")
        .output()
        .expect("bench --version");
    let err = String::from_utf8_lossy(&out.stderr);
    for set in [
        "background_thread:true",
        "dirty_decay_ms:30000",
        "muzzy_decay_ms:30000",
    ] {
        assert!(
            err.contains(&format!("-- Set conf value: {set}")),
            "{set} not set: {err}"
        );
    }
}

/// The binary frees memory on jemalloc's background threads, not inline on a runtime worker
/// (src/main.rs; docs/performance.md, "Allocator"): the threads exist in a running
/// `bench mock-server` once it has served a request.
#[cfg(target_os = "linux")]
#[test]
fn returns_memory_on_jemallocs_background_threads() {
    let (server, url) = start(&["--port", "0", "--zero-delay"]);
    let out = http1_post(
        &url,
        "/v1/completions",
        r#"{"prompt":"hi","max_tokens":4,"ignore_eos":true}"#,
    );
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    let pid = server.0.id();
    let names = || -> Vec<String> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                    .map(|c| c.trim().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let has_background = |seen: &[String]| seen.iter().any(|n| n == "jemalloc_bg_thd");
    // jemalloc starts its background threads with its first arenas; allow it a moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut seen = names();
    while !has_background(&seen) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        seen = names();
    }
    assert!(
        has_background(&seen),
        "no jemalloc background thread among {seen:?}"
    );
}
