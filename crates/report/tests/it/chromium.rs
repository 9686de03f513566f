//! Headless Chromium for the HTML tests: find it, load a page through a loopback proxy that
//! records every network request, with its console messages and a screenshot, and dump the
//! DOM as laid out. Shared with the plan crate's page test (`crates/plan/tests/it`).
use std::io::{BufRead as _, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("BENCH_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Chromium, or `None` after saying the test is skipped (a local run without it); under CI
/// (`CI` set) a missing Chromium fails the test (`.ci/setup` installs it).
pub(crate) fn chromium_or_skip() -> Option<PathBuf> {
    let found = find_chromium();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing under CI (.ci/setup installs it)"
        );
        eprintln!("skipped: no chromium on PATH (set BENCH_CHROMIUM or run .ci/setup)");
    }
    found
}

/// Chromium's own background services (updates, time, accounts): not requests of the page.
fn is_browser_housekeeping(request_line: &str) -> bool {
    let host = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .split(['/', ':'])
        .next()
        .unwrap_or("");
    ["google.com", "googleapis.com", "gvt1.com", "gstatic.com"]
        .iter()
        .any(|d| host == *d || host.ends_with(&format!(".{d}")))
}

pub(crate) struct Visit {
    pub(crate) page_requests: Vec<String>,
    pub(crate) console: Vec<String>,
    pub(crate) screenshot: Vec<u8>,
    /// Exit status and the last lines of Chromium's log, for failure messages.
    pub(crate) diagnostics: String,
}

/// Loads `page` in headless Chromium through a recording proxy, in a window `size` wide and
/// high (`"1300,2400"`).
pub(crate) fn visit(chromium: &Path, page: &Path, work: &Path, shot: &Path, size: &str) -> Visit {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let proxy = {
        let (seen, stop) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let _ = sock.set_nonblocking(false);
                        let _ = sock.set_read_timeout(Some(Duration::from_secs(2)));
                        let mut line = String::new();
                        let _ = BufReader::new(sock).read_line(&mut line);
                        if let Ok(mut s) = seen.lock() {
                            s.push(line.trim().to_string());
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        })
    };
    let profile = work.join(format!(
        "profile-{}",
        page.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--proxy-bypass-list=<-loopback>",
            "--virtual-time-budget=3000",
        ])
        .arg(format!("--window-size={size}"))
        .arg(format!("--proxy-server=127.0.0.1:{port}"))
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let stderr = child.stderr.take().expect("stderr");
    let reader = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    // Generous: a shared 2-core machine may be busy compiling.
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = reader.join().expect("stderr reader");
    let console = log
        .iter()
        .filter(|l| l.contains(":CONSOLE"))
        .cloned()
        .collect();
    let diagnostics = format!(
        "{status}; log tail:\n{}",
        log[log.len().saturating_sub(15)..].join("\n")
    );
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let _ = proxy.join();
    let page_requests = seen
        .lock()
        .expect("lock")
        .iter()
        .filter(|l| !is_browser_housekeeping(l))
        .cloned()
        .collect();
    Visit {
        page_requests,
        console,
        screenshot: std::fs::read(shot).unwrap_or_default(),
        diagnostics,
    }
}

/// The page's DOM after Chromium has parsed and laid it out (`--dump-dom`) in a window `size`.
pub(crate) fn dump_dom(chromium: &Path, page: &Path, work: &Path, size: &str) -> String {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--dump-dom",
        ])
        .arg(format!("--window-size={size}"))
        .arg(format!(
            "--user-data-dir={}",
            work.join("profile-dom").display()
        ))
        .arg(format!("file://{}", page.display()))
        .stderr(Stdio::null())
        .output()
        .expect("chromium --dump-dom");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
