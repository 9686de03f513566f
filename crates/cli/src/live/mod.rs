//! `--live`: a full-screen view of the run on the terminal (ratatui on its crossterm backend,
//! drawn on stderr): the running benchmark, the sweep so far, the answer, the server's gauges
//! (docs/cli.md, "Live view"). The run's events update a [`board::Board`] behind a lock; a
//! thread of its own draws it four times a second and reads the keys, so nothing of the view
//! runs on the run's tasks or a request's path.
//!
//! `q` (or Ctrl-C, which raw mode turns into a key) raises SIGINT, so the run stops exactly
//! as Ctrl-C stops it; a second one gives the terminal back and raises it again (exit at
//! once). Logs are kept while the view has the screen (the last one shown) and written to
//! stderr after it. [`term`] gives the terminal back on every way out.

mod board;
mod draw;
pub mod term;

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

pub use board::Shared;

/// How often the view is drawn (and the keys read).
const TICK: Duration = Duration::from_millis(250);
/// How long a finished run's last screen stays up unless `q` is pressed.
const LINGER: Duration = Duration::from_secs(15);

/// Log lines written while the view has the screen (`None`: logs go to stderr).
static HELD_LOGS: Mutex<Option<Vec<u8>>> = Mutex::new(None);

/// A running view: its board (the run's observer) and its thread.
#[derive(Debug)]
pub struct Live {
    pub board: Arc<Shared>,
    over: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Starts the view when stderr is a terminal; otherwise says once on stderr that the
/// progress line stands in, and returns `None`. `title`: `bench sweep`, ...
pub fn start(title: &str) -> Option<Live> {
    if !std::io::stderr().is_terminal() {
        eprintln!("--live: stderr is not a terminal; showing the progress line instead");
        return None;
    }
    let board = Arc::new(Shared::default());
    board.with(|b| b.title = title.to_string());
    let over = Arc::new(AtomicBool::new(false));
    hold_logs(true);
    let (b, o) = (board.clone(), over.clone());
    let thread = std::thread::Builder::new()
        .name("live-view".into())
        .spawn(move || show(&b, &o));
    match thread {
        Ok(t) => Some(Live {
            board,
            over,
            thread: Some(t),
        }),
        Err(e) => {
            hold_logs(false);
            eprintln!("--live: cannot start the view ({e}); showing the progress line instead");
            None
        }
    }
}

impl Live {
    /// The run is over: with `linger`, the last screen stays until `q` (or [`LINGER`]);
    /// then the terminal is given back, and the logs held meanwhile and the notes are
    /// written to stderr.
    pub fn finish(mut self, linger: bool) {
        self.board.with(|b| b.over = linger);
        self.over.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        term::restore();
        hold_logs(false);
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.over.store(true, Ordering::SeqCst);
        term::restore();
        hold_logs(false);
    }
}

/// Starts or stops holding the logs; stopping writes what was held to stderr.
fn hold_logs(on: bool) {
    let held = match HELD_LOGS.lock() {
        Ok(mut h) if on => {
            *h = Some(Vec::new());
            None
        }
        Ok(mut h) => h.take(),
        Err(_) => None,
    };
    if let Some(bytes) = held {
        use std::io::Write as _;
        let _ = std::io::stderr().write_all(&bytes);
    }
}

/// The log writer: to stderr, or held while the view has the screen.
#[derive(Debug)]
pub struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut h) = HELD_LOGS.lock() {
            if let Some(v) = h.as_mut() {
                v.extend_from_slice(buf);
                return Ok(buf.len());
            }
        }
        std::io::stderr().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// The last line of the logs held, if any.
fn last_log() -> Option<String> {
    let h = HELD_LOGS.lock().ok()?;
    let text = String::from_utf8_lossy(h.as_ref()?).into_owned();
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(str::to_string)
}

/// The view's thread: takes the terminal, draws and reads keys until the run is over (and,
/// when asked, a while after), then gives the terminal back.
fn show(board: &Shared, over: &AtomicBool) {
    let mut terminal = match term::take() {
        Ok(t) => t,
        Err(e) => {
            hold_logs(false);
            eprintln!("--live: cannot take the terminal ({e}); no progress is shown");
            return;
        }
    };
    let mut presses = 0u32;
    let mut over_at: Option<Instant> = None;
    // After `q`, the signal's own line lands on the screen: redrawn whole for a second.
    let mut redraw_until: Option<Instant> = None;
    let mut seen_log: Option<String> = None;
    loop {
        let log = last_log();
        if log.is_some() && log != seen_log {
            board.with(|b| b.note(log.as_deref().unwrap_or_default()));
            seen_log = log;
        }
        // Read before the board: `finish` marks the board first, then this flag.
        let ended = over.load(Ordering::SeqCst);
        let snapshot = board.snapshot();
        if redraw_until.is_some_and(|t| Instant::now() < t) {
            let _ = terminal.clear();
        }
        let _ = terminal.draw(|f| draw::frame(f, &snapshot));
        if ended {
            let at = *over_at.get_or_insert_with(Instant::now);
            if !snapshot.over || at.elapsed() >= LINGER {
                break;
            }
        }
        match next_key(TICK) {
            Key::Stop if snapshot.over => break,
            Key::Stop => {
                presses += 1;
                board.with(|b| b.stopping = true);
                redraw_until = Some(Instant::now() + Duration::from_secs(1));
                if presses > 1 {
                    // The second stop exits at once: the terminal first.
                    term::restore();
                    hold_logs(false);
                }
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT);
            }
            Key::Resize => {
                let _ = terminal.clear();
            }
            Key::None => {}
        }
    }
    term::restore();
}

enum Key {
    Stop,
    Resize,
    None,
}

/// The next key within `wait`: `q`, Esc or Ctrl-C stop.
fn next_key(wait: Duration) -> Key {
    if !event::poll(wait).unwrap_or(false) {
        return Key::None;
    }
    match event::read() {
        Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => match k.code {
            KeyCode::Char('q') | KeyCode::Esc => Key::Stop,
            KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => Key::Stop,
            _ => Key::None,
        },
        Ok(Event::Resize(..)) => Key::Resize,
        _ => Key::None,
    }
}
