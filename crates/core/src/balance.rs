//! One load spread across several targets (`--target A,B --balance NAME`): which target each
//! request goes to. The rule lives here, below the worker that sends and the report that counts
//! per target, so both read one definition.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

/// How requests are shared among several targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Balance {
    /// By dispatch order: request `k` (counted across the client) goes to target `k mod n`.
    #[default]
    RoundRobin,
    /// To the target with the fewest requests in flight from this client; ties go to the
    /// lowest index.
    LeastOutstanding,
    /// By session: every request of one session goes to the same target, chosen by a hash of
    /// its session key (the session number for bench's targets, the affinity header for the
    /// simulator's replicas); requests without a session by dispatch order.
    SessionAffinity,
}

impl Balance {
    /// Every balance, in the order `--help` lists them.
    pub const ALL: [Balance; 3] = [
        Balance::RoundRobin,
        Balance::LeastOutstanding,
        Balance::SessionAffinity,
    ];

    /// The command-line and profile name.
    pub fn name(self) -> &'static str {
        match self {
            Balance::RoundRobin => "round-robin",
            Balance::LeastOutstanding => "least-outstanding",
            Balance::SessionAffinity => "session-affinity",
        }
    }
}

impl fmt::Display for Balance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no [`Balance`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownBalance(pub String);

impl fmt::Display for UnknownBalance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown balance `{}`; expected round-robin, least-outstanding or session-affinity",
            self.0
        )
    }
}

impl std::error::Error for UnknownBalance {}

impl FromStr for Balance {
    type Err = UnknownBalance;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Balance::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownBalance(s.to_owned()))
    }
}

/// Chooses the target of each request by a [`Balance`], and counts the requests in flight of
/// each target. Shared by every request of the client (`&self`, atomics).
#[derive(Debug)]
pub struct Balancer {
    balance: Balance,
    /// Requests dispatched so far (round-robin's turn).
    next: AtomicUsize,
    /// Requests in flight, per target.
    in_flight: Box<[AtomicUsize]>,
}

impl Balancer {
    /// A balancer over `targets` targets (at least one).
    pub fn new(balance: Balance, targets: usize) -> Self {
        Self {
            balance,
            next: AtomicUsize::new(0),
            in_flight: (0..targets.max(1)).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    /// The balance it applies.
    pub fn balance(&self) -> Balance {
        self.balance
    }

    /// How many targets it shares requests among.
    pub fn targets(&self) -> usize {
        self.in_flight.len()
    }

    /// Chooses the next request's target and counts the request in flight there until the
    /// returned [`Assigned`] is dropped (when the request ends, or its future is dropped).
    ///
    /// Least-outstanding reads the counts, then adds to the chosen one: two requests chosen at
    /// the same instant on two threads may both take the same target.
    pub fn assign(&self) -> Assigned<'_> {
        self.assign_keyed(None)
    }

    /// [`Balancer::assign`] for a request of a session keyed `key` (session affinity keeps
    /// one key on one target; the other balances ignore the key).
    pub fn assign_keyed(&self, key: Option<&[u8]>) -> Assigned<'_> {
        let index = match (self.balance, key) {
            (Balance::SessionAffinity, Some(k)) => affinity_index(k, self.targets()),
            (Balance::RoundRobin | Balance::SessionAffinity, _) => {
                self.next.fetch_add(1, Ordering::Relaxed) % self.targets()
            }
            (Balance::LeastOutstanding, _) => self.least_outstanding(),
        };
        self.in_flight[index].fetch_add(1, Ordering::Relaxed);
        Assigned {
            balancer: self,
            index,
        }
    }

    /// The target with the fewest requests in flight, the lowest index on a tie.
    fn least_outstanding(&self) -> usize {
        let mut best = (usize::MAX, 0);
        for (i, n) in self.in_flight.iter().enumerate() {
            let n = n.load(Ordering::Relaxed);
            if n < best.0 {
                best = (n, i);
            }
        }
        best.1
    }

    /// Requests in flight at target `index` (0 for an index out of range).
    pub fn in_flight(&self, index: usize) -> usize {
        self.in_flight
            .get(index)
            .map_or(0, |n| n.load(Ordering::Relaxed))
    }
}

/// The target (of `n`) of session key `key` under session affinity: its 64-bit FNV-1a hash,
/// mixed (splitmix64's finalizer), modulo `n`. The simulator's replicas route by the same rule.
pub fn affinity_index(key: &[u8], n: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    (h % n.max(1) as u64) as usize
}

/// One request's target, counted in flight there until dropped.
#[derive(Debug)]
pub struct Assigned<'a> {
    balancer: &'a Balancer,
    index: usize,
}

impl Assigned<'_> {
    /// The target's index, from 0, in the order the targets were given.
    pub fn index(&self) -> usize {
        self.index
    }
}

impl Drop for Assigned<'_> {
    fn drop(&mut self) {
        self.balancer.in_flight[self.index].fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_an_unknown_name_is_refused_by_name() {
        for b in Balance::ALL {
            assert_eq!(b.name().parse::<Balance>(), Ok(b));
            assert_eq!(b.to_string(), b.name());
        }
        let e = "fastest".parse::<Balance>().expect_err("unknown");
        assert!(e.to_string().contains("`fastest`"), "{e}");
        assert_eq!(Balance::default(), Balance::RoundRobin);
    }

    #[test]
    fn session_affinity_keeps_a_session_on_one_target() {
        let b = Balancer::new(Balance::SessionAffinity, 3);
        let mut seen = std::collections::BTreeSet::new();
        for session in 0..40u64 {
            let key = session.to_string();
            let first = b.assign_keyed(Some(key.as_bytes())).index();
            assert_eq!(first, affinity_index(key.as_bytes(), 3));
            assert!((0..4).all(|_| b.assign_keyed(Some(key.as_bytes())).index() == first));
            seen.insert(first);
        }
        assert_eq!(seen.len(), 3, "sessions spread over every target");
        let got: Vec<usize> = (0..4).map(|_| b.assign().index()).collect();
        assert_eq!(got, [0, 1, 2, 0], "requests without a session in turn");
        // The other balances ignore the key.
        let rr = Balancer::new(Balance::RoundRobin, 2);
        let got: Vec<usize> = (0..3)
            .map(|_| rr.assign_keyed(Some(b"7")).index())
            .collect();
        assert_eq!(got, [0, 1, 0]);
    }

    #[test]
    fn round_robin_goes_by_dispatch_order_whatever_is_in_flight() {
        let b = Balancer::new(Balance::RoundRobin, 3);
        let held: Vec<_> = (0..7).map(|_| b.assign()).collect();
        let order: Vec<usize> = held.iter().map(Assigned::index).collect();
        assert_eq!(order, [0, 1, 2, 0, 1, 2, 0]);
        assert_eq!((b.in_flight(0), b.in_flight(1), b.in_flight(2)), (3, 2, 2));
        drop(held);
        assert_eq!((b.in_flight(0), b.in_flight(1), b.in_flight(2)), (0, 0, 0));
    }

    #[test]
    fn least_outstanding_takes_the_emptiest_target_and_the_lowest_index_on_a_tie() {
        let b = Balancer::new(Balance::LeastOutstanding, 3);
        let first = b.assign();
        let second = b.assign();
        let third = b.assign();
        assert_eq!((first.index(), second.index(), third.index()), (0, 1, 2));
        // Target 1 finishes: it alone has none in flight.
        drop(second);
        let fourth = b.assign();
        assert_eq!(fourth.index(), 1);
        // All hold one: the tie goes to 0 (that request ends at once, so 0 ties again).
        assert_eq!(b.assign().index(), 0);
        let fifth = b.assign();
        assert_eq!(fifth.index(), 0);
        drop((first, third, fourth, fifth));
        assert_eq!((b.in_flight(0), b.in_flight(1), b.in_flight(2)), (0, 0, 0));
    }

    #[test]
    fn a_slow_target_gets_fewer_requests_than_a_fast_one() {
        // Target 0 never finishes; target 1 finishes each request before the next is sent.
        let b = Balancer::new(Balance::LeastOutstanding, 2);
        let mut stuck = Vec::new();
        let mut to_fast = 0;
        for _ in 0..100 {
            let a = b.assign();
            if a.index() == 0 {
                stuck.push(a);
            } else {
                to_fast += 1;
            }
        }
        assert_eq!((stuck.len(), to_fast), (1, 99));
    }
}
