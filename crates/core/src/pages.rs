//! Append-only storage in pages that never move: what a benchmark keeps per request and per
//! chunk grows while the requests stream in, on the runtime thread that also sends them (the
//! report's accumulator, the scheduler's departures).
//!
//! A `Vec` that doubles copies everything it holds at each doubling, and for a moment holds
//! both copies: at 15,000 requests/s of 128 chunks, 4-byte chunk offsets of a 10 s benchmark
//! are 77 MB, whose last doubling copies 64 MiB in one go (a stall of the thread that was to
//! send the next requests, and 64 MiB more peak memory; docs/performance.md, "Client memory: pages
//! and 2-byte chunk gaps"). Pages of a fixed least size are allocated once each and filled in
//! place instead.
//!
//! A run (the items pushed together, say one request's chunks) is kept whole in one page, so
//! that it reads back as one slice. A position is `page << 32 | offset`.

/// Pages of `T`, each at least `min_page` items long (longer for a longer run).
#[derive(Debug, Clone)]
pub struct Pages<T> {
    pages: Vec<Vec<T>>,
    min_page: usize,
    len: usize,
}

/// The bits of a position that hold the offset in its page.
const OFFSET_BITS: u32 = 32;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;

/// The least page length of [`Pages::default`], in items.
pub const DEFAULT_PAGE: usize = 1 << 12;

impl<T> Default for Pages<T> {
    fn default() -> Self {
        Self::new(DEFAULT_PAGE)
    }
}

impl<T> Pages<T> {
    /// Empty storage whose pages hold at least `min_page` items.
    pub const fn new(min_page: usize) -> Self {
        Self {
            pages: Vec::new(),
            min_page,
            len: 0,
        }
    }

    /// Appends `items` as one run, in the current page if they fit in what it has left, else
    /// in a new page; returns the run's position. Nothing stored before moves.
    pub fn push_run(&mut self, items: impl ExactSizeIterator<Item = T>) -> u64 {
        let n = items.len();
        let fits = self
            .pages
            .last()
            .is_some_and(|p| p.capacity() - p.len() >= n);
        if !fits {
            // A page longer than the offset bits can address is never made: a run of four
            // billion items starts a page of its own and is cut there (never met in practice).
            let cap = n.max(self.min_page).min(OFFSET_MASK as usize);
            self.pages.push(Vec::with_capacity(cap));
        }
        let page_no = self.pages.len() - 1;
        let page = &mut self.pages[page_no];
        let offset = page.len();
        let room = page.capacity() - offset;
        let before = page.len();
        page.extend(items.take(room));
        self.len += page.len() - before;
        ((page_no as u64) << OFFSET_BITS) | offset as u64
    }

    /// Appends one item; returns its position.
    pub fn push(&mut self, item: T) -> u64 {
        self.push_run(std::iter::once(item))
    }

    /// The `len` items from `at` (a position [`Pages::push_run`] returned), or as many of
    /// them as are stored.
    pub fn run(&self, at: u64, len: usize) -> &[T] {
        let Some(page) = self.pages.get((at >> OFFSET_BITS) as usize) else {
            return &[];
        };
        let from = ((at & OFFSET_MASK) as usize).min(page.len());
        &page[from..from.saturating_add(len).min(page.len())]
    }

    /// The item `i` places after position `at` in its run.
    pub fn get(&self, at: u64, i: usize) -> Option<&T> {
        self.run(at, i.saturating_add(1)).get(i)
    }

    /// Every item, in the order pushed.
    pub fn iter(&self) -> impl Iterator<Item = &T> + Clone {
        self.pages.iter().flatten()
    }

    /// Items stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every item, in the order pushed, in one `Vec` (one allocation of the whole, made when
    /// the storing is over).
    pub fn into_vec(self) -> Vec<T> {
        let mut all = Vec::with_capacity(self.len);
        for page in self.pages {
            all.extend(page);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_read_back_whole_and_nothing_moves() {
        let mut p = Pages::new(4);
        let a = p.push_run([1, 2, 3].into_iter());
        let first_page = p.pages[0].as_ptr();
        // Does not fit in the page's one free place: a new page.
        let b = p.push_run([4, 5].into_iter());
        // Longer than a page: a page of its own.
        let c = p.push_run(10..20);
        let d = p.push(7);
        assert_eq!(p.run(a, 3), &[1, 2, 3]);
        assert_eq!(p.run(b, 2), &[4, 5]);
        assert_eq!(p.run(c, 10), (10..20).collect::<Vec<_>>().as_slice());
        assert_eq!(p.run(d, 1), &[7]);
        assert_eq!(p.get(c, 9), Some(&19));
        assert_eq!(p.get(c, 10), None);
        assert_eq!(p.pages[0].as_ptr(), first_page);
        assert_eq!(p.len(), 16);
        assert_eq!(
            p.iter().copied().collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
                .into_iter()
                .chain(10..20)
                .chain([7])
                .collect::<Vec<_>>()
        );
        // Only the last page is filled: the room left after [4, 5] is not gone back to.
        assert_eq!(p.pages.len(), 4);
        assert_eq!(d >> OFFSET_BITS, 3);
        let all = p.into_vec();
        assert_eq!(all.capacity(), 16);
        assert_eq!(
            all,
            [1, 2, 3, 4, 5]
                .into_iter()
                .chain(10..20)
                .chain([7])
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn positions_out_of_range_read_nothing() {
        let mut p: Pages<u32> = Pages::new(8);
        assert!(p.is_empty());
        assert_eq!(p.run(0, 3), &[] as &[u32]);
        let a = p.push_run([1, 2].into_iter());
        assert_eq!(p.run(a, 5), &[1, 2]);
        assert_eq!(p.run(5 << OFFSET_BITS, 1), &[] as &[u32]);
        assert_eq!(p.get(a, 2), None);
    }

    #[test]
    fn an_empty_run_takes_no_room() {
        let mut p: Pages<u32> = Pages::new(2);
        let a = p.push_run(std::iter::empty());
        assert_eq!(p.run(a, 0), &[] as &[u32]);
        let b = p.push_run([1, 2].into_iter());
        assert_eq!(p.run(b, 2), &[1, 2]);
        assert_eq!(p.pages.len(), 1);
    }
}
