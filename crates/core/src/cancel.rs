//! The client's own cancellations as load (`--cancel-rate`, `--cancel-after`; AIPerf's
//! `--request-cancellation-rate` and `--request-cancellation-delay`; docs/metrics.md,
//! "Cancellation"): a share of the requests is cancelled by the client a fixed delay after it
//! is sent, as users do when they close a chat. Such a request ends
//! [`Outcome::ClientCancelled`](crate::Outcome::ClientCancelled), its own status: not an error,
//! not incomplete.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Parts per million: the share's exact unit, so that choosing by index is integer arithmetic.
const PPM: u64 = 1_000_000;

/// Which requests the client cancels, and when.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cancellation {
    /// The share of requests cancelled, above 0 and at most 1.
    pub share: f64,
    /// How long after its dispatch a chosen request is cancelled, if it has not ended, in
    /// seconds (0 cancels it as soon as it is written).
    pub after_s: f64,
}

impl Cancellation {
    /// A cancellation of `share` (0 < share <= 1) of the requests, `after_s` seconds (finite,
    /// at least 0) after each is sent; the reason when either is out of range.
    pub fn new(share: f64, after_s: f64) -> Result<Self, String> {
        if !(share.is_finite() && share > 0.0 && share <= 1.0) {
            return Err(format!(
                "`{share}` is not a share above 0 and at most 100% (10%, 0.1)"
            ));
        }
        if !(after_s.is_finite() && after_s >= 0.0) {
            return Err(format!("`{after_s}` is not a delay of at least 0 s"));
        }
        Ok(Self { share, after_s })
    }

    /// The share in parts per million (at least 1).
    fn ppm(&self) -> u64 {
        ((self.share * PPM as f64).round() as u64).clamp(1, PPM)
    }

    /// Whether the request at `index` of the whole schedule (from 0) is cancelled: exactly the
    /// share of every run of requests, evenly spread (request `i` is chosen when
    /// `floor((i + 1) s) > floor(i s)`, so at 25% every fourth, the 4th, 8th...), the same on
    /// every run and in every shard (a shard passes its requests' indices in the whole
    /// schedule).
    pub fn chooses(&self, index: u64) -> bool {
        let p = self.ppm();
        let at = |i: u64| u128::from(i) * u128::from(p) / u128::from(PPM);
        at(index + 1) > at(index)
    }

    /// The delay after dispatch.
    pub fn after(&self) -> Duration {
        Duration::from_secs_f64(self.after_s)
    }

    /// How many of the first `n` requests of the schedule are chosen.
    pub fn chosen_of(&self, n: u64) -> u64 {
        (u128::from(n) * u128::from(self.ppm()) / u128::from(PPM)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_the_share_is_chosen_evenly_spread() {
        let c = Cancellation::new(0.25, 0.5).expect("valid");
        let chosen: Vec<u64> = (0..12).filter(|&i| c.chooses(i)).collect();
        assert_eq!(chosen, vec![3, 7, 11]);
        for share in [0.1, 0.25, 1.0 / 3.0, 0.5, 0.999, 1.0] {
            let c = Cancellation::new(share, 0.0).expect("valid");
            for n in [1u64, 7, 100, 1000, 12_345] {
                let count = (0..n).filter(|&i| c.chooses(i)).count() as u64;
                assert_eq!(count, c.chosen_of(n), "{share} of {n}");
                assert!(
                    (count as f64 - share * n as f64).abs() <= 1.0,
                    "{share} of {n}"
                );
            }
        }
        assert!((0..50).all(|i| Cancellation::new(1.0, 0.0).expect("valid").chooses(i)));
    }

    #[test]
    fn out_of_range_values_are_refused() {
        for (share, after) in [
            (0.0, 1.0),
            (1.5, 1.0),
            (f64::NAN, 1.0),
            (0.1, -1.0),
            (0.1, f64::INFINITY),
        ] {
            assert!(Cancellation::new(share, after).is_err(), "{share} {after}");
        }
        assert_eq!(
            Cancellation::new(0.1, 0.5).expect("valid").after(),
            Duration::from_millis(500)
        );
    }
}
