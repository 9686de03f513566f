//! The terminal the live view takes: raw mode and the alternate screen on stderr, given back
//! on every way out: the view's end, a panic (a hook restores it before the panic's message),
//! and a second signal's immediate exit (`signals` calls [`restore`]).

use std::io::Stderr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::Terminal;

/// Whether the view has the terminal (raw mode, alternate screen).
static TAKEN: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// The view's terminal.
pub type Term = Terminal<CrosstermBackend<Stderr>>;

/// Takes the terminal: raw mode, the alternate screen, the cursor hidden; a panic from now on
/// gives it back before its message is printed.
pub fn take() -> std::io::Result<Term> {
    restore_on_panic();
    terminal::enable_raw_mode()?;
    TAKEN.store(true, Ordering::SeqCst);
    let mut err = std::io::stderr();
    if let Err(e) = execute!(err, terminal::EnterAlternateScreen, cursor::Hide) {
        restore();
        return Err(e);
    }
    match Terminal::new(CrosstermBackend::new(std::io::stderr())) {
        Ok(t) => Ok(t),
        Err(e) => {
            restore();
            Err(e)
        }
    }
}

/// Gives the terminal back (leaves the alternate screen, shows the cursor, ends raw mode);
/// nothing when the view does not have it. Safe to call from any thread, more than once.
pub fn restore() {
    if TAKEN.swap(false, Ordering::SeqCst) {
        let mut err = std::io::stderr();
        let _ = execute!(err, terminal::LeaveAlternateScreen, cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}

/// Installs (once) a panic hook that gives the terminal back before the previous hook prints
/// the panic's message.
fn restore_on_panic() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic while the view has the terminal gives it back (the flag is what `restore`
    /// acts on; no terminal is taken in a unit test).
    #[test]
    fn a_panic_gives_the_terminal_back() {
        restore_on_panic();
        TAKEN.store(true, Ordering::SeqCst);
        let panicked = std::panic::catch_unwind(|| panic!("a panic in the live view's test"));
        assert!(panicked.is_err());
        assert!(!TAKEN.load(Ordering::SeqCst));
    }
}
