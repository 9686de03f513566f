//! Raw-socket misbehaviours (issue 13): a scripted HTTP/1.1 server that answers the model list
//! properly, then misbehaves on every generation request: closes without answering, sends
//! garbage instead of HTTP, a 10 MB or a 70 MB SSE line, invalid UTF-8, a wrong content-type,
//! or a stream of zero tokens. For each x completions / chat / TGI: no panic, one error line,
//! the documented exit code, and bench's count equal to what the server received.

use crate::common;

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Clone, Copy, Debug)]
enum Misbehaviour {
    CloseUnanswered,
    Garbage,
    HugeLine10M,
    HugeLine70M,
    InvalidUtf8,
    WrongContentType,
    ZeroTokens,
}

const ALL: [Misbehaviour; 7] = [
    Misbehaviour::CloseUnanswered,
    Misbehaviour::Garbage,
    Misbehaviour::HugeLine10M,
    Misbehaviour::HugeLine70M,
    Misbehaviour::InvalidUtf8,
    Misbehaviour::WrongContentType,
    Misbehaviour::ZeroTokens,
];

/// Reads one request (head and content-length body); returns the request line.
fn read_request(c: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = c.read(&mut byte).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&byte[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut have = buf.len() - head_end;
    while have < len {
        let n = c.read(&mut byte).ok()?;
        if n == 0 {
            return None;
        }
        have += n;
    }
    head.lines().next().map(str::to_string)
}

fn sse_head() -> &'static str {
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
}

fn misbehave(c: &mut TcpStream, m: Misbehaviour) {
    let _ = match m {
        Misbehaviour::CloseUnanswered => Ok(()),
        Misbehaviour::Garbage => c.write_all(b"\x00\x01garbage instead of HTTP\r\n\r\n"),
        Misbehaviour::HugeLine10M | Misbehaviour::HugeLine70M => {
            let mb = if matches!(m, Misbehaviour::HugeLine10M) { 10 } else { 70 };
            let _ = c.write_all(sse_head().as_bytes());
            let _ = c.write_all(b"data: {\"choices\":[{\"text\":\"");
            // Words, not one 10 MB word: counting a single huge word with the BPE tokenizer
            // is quadratic (a known gap, see docs/reliability.md); the line is what is tested.
            let chunk = b"lorem ipsum ".repeat((1 << 20) / 12);
            for _ in 0..mb {
                if c.write_all(&chunk).is_err() {
                    break;
                }
            }
            // With the usage in the event: the line is what is tested here. Without it, bench's
            // tokenizer fallback counts the 10 MB of text (exact, linear, but ~4 s of CPU and
            // ~1.4 GB of the tokenizers crate's encoding per request; docs/reliability.md).
            c.write_all(b"\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\n")
        }
        Misbehaviour::InvalidUtf8 => {
            let _ = c.write_all(sse_head().as_bytes());
            c.write_all(b"data: {\"choices\":[{\"text\":\"\xff\xfe\xc3\"}]}\n\ndata: \xff\xff\n\n")
        }
        Misbehaviour::WrongContentType => c.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 13\r\nconnection: close\r\n\r\n<html></html>",
        ),
        Misbehaviour::ZeroTokens => {
            let _ = c.write_all(sse_head().as_bytes());
            c.write_all(b"data: [DONE]\n\n")
        }
    };
}

/// Serves the model list properly and misbehaves on every POST; counts the POSTs.
fn server(m: Misbehaviour) -> (String, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    let posts = Arc::new(AtomicUsize::new(0));
    let p = posts.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut c = c;
                let Some(line) = read_request(&mut c) else {
                    return;
                };
                if line.starts_with("GET") {
                    let body = r#"{"object":"list","data":[{"id":"raw-model","object":"model"}]}"#;
                    let _ = write!(
                        c,
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    return;
                }
                p.fetch_add(1, Ordering::SeqCst);
                misbehave(&mut c, m);
                let _ = c.flush();
                let _ = c.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (url, posts)
}

fn check(m: Misbehaviour, backend: &str, dir: &std::path::Path) -> Result<(), String> {
    let (url, posts) = server(m);
    let t0 = std::time::Instant::now();
    let json = dir.join(format!("{m:?}-{backend}.json"));
    let out = common::bench_command()
        .args([
            "run",
            "--target",
            &url,
            "--backend",
            backend,
            "--rate-type",
            "synchronous",
            "--max-requests",
            "3",
            "--data",
            "prompt_tokens=8,output_tokens=4",
            "--console",
            "none",
            "-q",
            "--output",
            json.to_str().expect("utf8"),
        ])
        .env("RUST_LOG", "off")
        .output()
        .map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let name = format!("{m:?} x {backend}");
    let _took = t0.elapsed();
    if err.contains("panicked") {
        return Err(format!("{name}: PANIC\n{err}"));
    }
    let run: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&json).map_err(|e| format!("{name}: no report: {e}\n{err}"))?,
    )
    .map_err(|e| format!("{name}: {e}"))?;
    let r = &run["benchmarks"][0]["requests"];
    let (completed, total) = (
        r["completed"].as_u64().unwrap_or(0),
        r["total"].as_u64().unwrap_or(0),
    );
    let sent = posts.load(Ordering::SeqCst) as u64;
    let mut problems = Vec::new();
    if total != 3 {
        problems.push(format!("total {total}, asked for 3"));
    }
    // A connection closed before any answer is resent (at most twice), and counted once.
    let resends_allowed = matches!(m, Misbehaviour::CloseUnanswered | Misbehaviour::Garbage);
    if sent < total || (!resends_allowed && sent != total) || sent > 3 * total {
        problems.push(format!(
            "server received {sent} requests, bench counted {total}"
        ));
    }
    let want = if completed == 0 { 1 } else { 0 };
    if out.status.code() != Some(want) {
        problems.push(format!("exit {:?}, documented {want}", out.status.code()));
    }
    let lines = err.lines().filter(|l| l.starts_with("error")).count();
    if want == 1 && lines != 1 {
        problems.push(format!("{lines} error lines on stderr"));
    }
    if matches!(m, Misbehaviour::ZeroTokens) {
        // Zero tokens is a valid (empty) answer, never an invented token.
        let out_tokens = &run["benchmarks"][0]["tokens"]["output"]["completed"]["total"];
        if out_tokens.as_u64().unwrap_or(1) != 0 {
            problems.push(format!("output tokens {out_tokens}"));
        }
    } else if completed != 0 {
        problems.push(format!("{completed} completed from a misbehaving server"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{name}: {}\n{err}", problems.join("; ")))
    }
}

#[test]
fn raw_socket_misbehaviours_are_errors_not_panics_and_all_counted() {
    let dir: PathBuf = common::tmp("raw", "runs");
    let mut handles = Vec::new();
    for m in ALL {
        let dir = dir.clone();
        handles.push(std::thread::spawn(move || {
            ["openai-completions", "openai-chat", "tgi"]
                .iter()
                .filter_map(|b| check(m, b, &dir).err())
                .collect::<Vec<_>>()
        }));
    }
    let failures: Vec<String> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("thread"))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("raw-socket matrix: {} cases", ALL.len() * 3);
}
