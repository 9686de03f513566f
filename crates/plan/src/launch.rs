//! A server bench launches for one configuration: started by `sh -c` in a process group of
//! its own with its output in a log file, polled until it answers, and torn down as a group
//! (SIGTERM, then SIGKILL after a grace) when dropped, so that no error, panic or interruption
//! leaves a server behind. Beside each server a watchdog shell ([`WATCHDOG`]) tears its group
//! down the same way if bench itself dies without dropping it (SIGKILL, the OOM killer).

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// The longest wait for a killed process group to be gone.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// Lines of a failed server's log kept in the plan.
pub const LOG_TAIL_LINES: usize = 20;

/// A free TCP port on the loopback interface (bound, then released for the server).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Kills process group `group` at once (SIGKILL): what a front end does to the group of the
/// server that runs before it exits on a second signal. Nothing for 0 or less.
pub fn kill_group(group: i32) {
    if group > 0 {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
}

/// Why a server did not become ready.
#[derive(Debug)]
pub enum NotReady {
    /// It exited first.
    Exited(String),
    /// It did not answer in time: the seconds waited and the URL polled.
    Timeout(f64, String),
    /// The plan was interrupted while waiting.
    Interrupted,
}

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotReady::Exited(s) => write!(f, "the server exited before it was ready ({s})"),
            NotReady::Timeout(t, url) => write!(
                f,
                "the server did not answer 200 at {url} within {t} s (--ready-timeout)"
            ),
            NotReady::Interrupted => f.write_str("interrupted while waiting for the server"),
        }
    }
}

/// The watchdog of a launched server, run by `sh -c` with arguments bench's pid, the server's
/// process group and the grace in seconds: once a second it reads its own parent from
/// `/proc/self/stat`'s fourth field (`$$` is the watchdog), and when that is no longer bench
/// (bench exited, however, and the watchdog was handed to another parent) it sends the group
/// SIGTERM, then SIGKILL once the grace has passed with the group still alive (dash's `kill`,
/// `sh` on Debian, takes no `--`). bench kills it when it stops the server itself.
pub const WATCHDOG: &str = r#"bench=$1 group=$2 grace=$3
while :; do
  read -r _ _ _ parent _ < /proc/$$/stat || break
  [ "$parent" = "$bench" ] || break
  sleep 1
done
kill -TERM "-$group" 2>/dev/null
waited=0
while [ "$waited" -lt "$grace" ] && kill -0 "-$group" 2>/dev/null; do
  sleep 1
  waited=$((waited + 1))
done
kill -KILL "-$group" 2>/dev/null"#;

/// A launched server; dropping it tears its process group down.
#[derive(Debug)]
pub struct Launched {
    child: Child,
    /// The watchdog that stops the server if bench dies first ([`WATCHDOG`]).
    watchdog: Option<Child>,
    grace: Duration,
    stopped: bool,
}

impl Launched {
    /// Starts `command` through `sh -c` in a new process group, its stdout and stderr
    /// appended to `log`, which begins with the command as `shown` (its secrets hidden).
    pub fn start(command: &str, shown: &str, log: &Path, grace: f64) -> std::io::Result<Launched> {
        let mut out = File::create(log)?;
        let _ = writeln!(out, "$ {shown}");
        let err = out.try_clone()?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()?;
        let watchdog = Command::new("sh")
            .args(["-c", WATCHDOG, "bench-watchdog"])
            .args([
                std::process::id().to_string(),
                child.id().to_string(),
                format!("{}", grace.ceil().max(1.0)),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| {
                tracing::warn!("no watchdog for the server (it may outlive a killed bench): {e}")
            })
            .ok();
        Ok(Launched {
            child,
            watchdog,
            grace: Duration::from_secs_f64(grace),
            stopped: false,
        })
    }

    /// The server's process group (its shell's pid).
    pub fn group(&self) -> i32 {
        self.child.id() as i32
    }

    /// `Some(how)` once the server's shell has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("cannot wait for it: {e}")),
        }
    }

    /// Polls `addr` with `GET path` until it answers 200, the server exits, `timeout`
    /// seconds pass, or `interrupted` is set.
    pub fn wait_ready(
        &mut self,
        addr: SocketAddr,
        path: &str,
        timeout: f64,
        interrupted: impl Fn() -> bool,
    ) -> Result<(), NotReady> {
        let deadline = Instant::now() + Duration::from_secs_f64(timeout);
        loop {
            if interrupted() {
                return Err(NotReady::Interrupted);
            }
            if let Some(how) = self.exited() {
                return Err(NotReady::Exited(how));
            }
            if status_of(addr, path) == Some(200) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(NotReady::Timeout(timeout, format!("http://{addr}{path}")));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGTERM to the whole process group, SIGKILL after the grace; waits for the shell. The
    /// watchdog goes first: bench stops the server itself.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        if let Some(mut w) = self.watchdog.take() {
            let _ = killpg(Pid::from_raw(w.id() as i32), Signal::SIGKILL);
            let _ = w.wait();
        }
        let group = Pid::from_raw(self.child.id() as i32);
        let _ = killpg(group, Signal::SIGTERM);
        let deadline = Instant::now() + self.grace;
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() && !group_alive(group) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = killpg(group, Signal::SIGKILL);
        let _ = self.child.wait();
        // SIGKILL is delivered, not yet done: wait for the group's processes to be gone (and
        // their ports released) before the next configuration, or bench's exit.
        let deadline = Instant::now() + KILL_WAIT;
        while group_alive(group) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether any process of `group` is alive. On Linux a process counts until every one of its
/// threads has exited: a process whose main thread is a zombie while its other threads still
/// tear down (llama.cpp's server, ending with a model mapped, took seconds) still holds its
/// listening socket; one whose threads are all zombies (exited, not yet reaped) holds nothing.
fn group_alive(group: Pid) -> bool {
    if killpg(group, None).is_err() {
        return false;
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return true;
    };
    let raw = group.as_raw().to_string();
    procs.flatten().any(|e| {
        let in_group = stat_fields(&e.path().join("stat")).get(2) == Some(&raw);
        in_group && has_live_thread(&e.path())
    })
}

/// The fields of a `/proc/.../stat` file after the command's closing paren: `state ppid pgrp ...`.
fn stat_fields(path: &Path) -> Vec<String> {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    stat.rsplit_once(')').map_or(vec![], |(_, rest)| {
        rest.split_whitespace().map(String::from).collect()
    })
}

/// Whether any thread of the process at `proc_dir` is neither a zombie nor dead.
fn has_live_thread(proc_dir: &Path) -> bool {
    let Ok(tasks) = std::fs::read_dir(proc_dir.join("task")) else {
        return false;
    };
    tasks.flatten().any(|t| {
        let state = stat_fields(&t.path().join("stat"));
        !matches!(state.first().map(String::as_str), None | Some("Z" | "X"))
    })
}

/// The last [`LOG_TAIL_LINES`] lines of `path`.
pub fn log_tail(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(LOG_TAIL_LINES);
    lines[from..].iter().map(|l| l.to_string()).collect()
}

/// The status code of `GET path` at `addr` (HTTP/1.1, one short connection), `None` when
/// nothing answers.
fn status_of(addr: SocketAddr, path: &str) -> Option<u16> {
    let t = Duration::from_secs(2);
    let mut s = TcpStream::connect_timeout(&addr, t).ok()?;
    s.set_read_timeout(Some(t)).ok()?;
    s.set_write_timeout(Some(t)).ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut head = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    let line = std::str::from_utf8(&head[..n]).ok()?;
    line.strip_prefix("HTTP/1.")?.get(2..5)?.parse().ok()
}

/// Whether something already listens on `addr` (a port the serve command names itself).
pub fn in_use(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_torn_down_with_its_children() {
        let dir = std::env::temp_dir().join(format!("bench-launch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let log = dir.join("server.log");
        // A shell that ignores TERM and leaves a child behind: SIGKILL after the grace ends both.
        const TRAP: &str = "trap '' TERM; sleep 60 & echo started; wait";
        let mut l = Launched::start(TRAP, TRAP, &log, 0.3).expect("start");
        let group = Pid::from_raw(l.child.id() as i32);
        std::thread::sleep(Duration::from_millis(200));
        assert!(l.exited().is_none());
        let t = Instant::now();
        drop(l);
        assert!(!group_alive(group), "the group outlived its teardown");
        assert!(
            t.elapsed() >= Duration::from_millis(300),
            "SIGKILL came before the grace"
        );
        assert_eq!(
            log_tail(&log),
            vec!["$ trap '' TERM; sleep 60 & echo started; wait", "started"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn readiness_ends_when_the_server_exits_or_the_time_passes() {
        let dir = std::env::temp_dir().join(format!("bench-ready-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let no = || false;
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port().expect("port"))
            .parse()
            .expect("addr");
        let mut l = Launched::start("echo boom >&2; exit 3", "boom", &dir.join("a.log"), 1.0)
            .expect("start");
        match l.wait_ready(addr, "/v1/models", 30.0, no) {
            Err(NotReady::Exited(how)) => assert!(how.contains('3'), "{how}"),
            other => panic!("{other:?}"),
        }
        assert!(log_tail(&dir.join("a.log")).contains(&"boom".to_string()));
        let mut l = Launched::start("sleep 30", "sleep", &dir.join("b.log"), 1.0).expect("start");
        let e = l
            .wait_ready(addr, "/v1/models", 0.3, no)
            .expect_err("timeout");
        assert!(matches!(e, NotReady::Timeout(..)));
        assert_eq!(
            e.to_string(),
            format!("the server did not answer 200 at http://{addr}/v1/models within 0.3 s (--ready-timeout)")
        );
        assert!(matches!(
            l.wait_ready(addr, "/", 30.0, || true),
            Err(NotReady::Interrupted)
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
