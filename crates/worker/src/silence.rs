//! Requests that have had no byte from the server for [`SILENCE_NOTICE`], for the live
//! progress. A request marks itself when its own timer for the notice fires (the timer it
//! already has for its timeout, set earlier), so a request whose bytes come in time pays
//! nothing; the board is locked only by silent requests and by the progress reading it.

use std::sync::Mutex;

use bench_core::{Silent, Waiting};
use tokio::time::Instant;

/// The silent requests of one worker (shared by its clones).
#[derive(Debug, Default)]
pub(crate) struct Board(Mutex<Vec<(u64, Instant, Waiting)>>);

impl Board {
    /// The silent requests now, longest silent first.
    pub(crate) fn list(&self) -> Vec<Silent> {
        let now = Instant::now();
        let mut v: Vec<Silent> = self
            .0
            .lock()
            .map(|v| {
                v.iter()
                    .map(|&(id, since, waiting_for)| Silent {
                        id,
                        silent_for: now.saturating_duration_since(since),
                        waiting_for,
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by(|a, b| b.silent_for.cmp(&a.silent_for).then(a.id.cmp(&b.id)));
        v
    }
}

/// One request's entry on the board: set when it falls silent, cleared when a byte comes or
/// the request ends (on drop).
pub(crate) struct Mark<'a> {
    board: &'a Board,
    id: u64,
    on: bool,
}

impl<'a> Mark<'a> {
    pub(crate) fn new(board: &'a Board, id: u64) -> Self {
        Mark {
            board,
            id,
            on: false,
        }
    }

    /// Puts the request on the board: silent since `since`, waiting for `waiting`.
    pub(crate) fn set(&mut self, since: Instant, waiting: Waiting) {
        self.clear();
        if let Ok(mut v) = self.board.0.lock() {
            v.push((self.id, since, waiting));
            self.on = true;
        }
    }

    /// Takes the request off the board (nothing to do, and no lock, when it is not on it).
    #[inline]
    pub(crate) fn clear(&mut self) {
        if !self.on {
            return;
        }
        self.on = false;
        if let Ok(mut v) = self.board.0.lock() {
            if let Some(i) = v.iter().position(|e| e.0 == self.id) {
                v.swap_remove(i);
            }
        }
    }
}

impl Drop for Mark<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn marks_come_and_go_longest_silent_first() {
        let board = Board::default();
        let t0 = Instant::now();
        let mut a = Mark::new(&board, 3);
        let mut b = Mark::new(&board, 7);
        a.set(t0, Waiting::Response);
        tokio::time::advance(Duration::from_secs(2)).await;
        b.set(Instant::now(), Waiting::Stream);
        tokio::time::advance(Duration::from_secs(10)).await;
        let l = board.list();
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].id, l[0].silent_for), (3, Duration::from_secs(12)));
        assert_eq!((l[1].id, l[1].waiting_for), (7, Waiting::Stream));
        a.clear();
        assert_eq!(board.list().len(), 1);
        drop(b);
        assert!(board.list().is_empty());
    }
}
