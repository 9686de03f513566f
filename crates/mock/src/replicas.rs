//! Replicas: `replicas` independent engines behind the one listener, and the balancing policy
//! that routes each request to one of them (`docs/simulator.md`, "Replicas").
//!
//! A replica is a whole server: its own engine (batch slots, FIFO queue, prefix cache, step
//! loop, KV usage) and its own pooling slots. Every request, generation or pooling, is routed
//! once, when its head arrives, and holds a [`Lease`] on its replica until its response ends
//! (the body is written or dropped). Round-robin takes the replicas in turn by arrival order;
//! least-outstanding takes the one with the fewest leases, the lowest index among equals, as a
//! load balancer that counts active requests per upstream does. Only least-outstanding counts
//! leases, and one replica routes nothing, so `replicas: 1` costs nothing per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use crate::engine::{self, EngineHandle, EngineParams};
use crate::metrics::Metrics;
use crate::{Balance, MockConfig};

/// One replica's resources.
#[derive(Debug)]
pub(crate) struct Replica {
    /// Its engine; `None` in zero-delay mode, which has none.
    pub engine: Option<EngineHandle>,
    /// Pooling requests in service at once (`max_batch`); the rest wait, first come first
    /// served.
    pub pool_slots: Semaphore,
}

/// The replicas and the router.
#[derive(Debug)]
pub(crate) struct Replicas {
    replicas: Vec<Replica>,
    router: Router,
}

/// How the next request picks its replica.
#[derive(Debug)]
enum Router {
    /// One replica: nothing to choose, nothing counted.
    Single,
    /// The requests routed so far: the next one's turn.
    RoundRobin(AtomicU64),
    /// Outstanding leases per replica.
    LeastOutstanding(Arc<Mutex<Vec<u32>>>),
    /// A request with a session key goes to [`bench_core::affinity_index`] of it; the others
    /// in turn, as round-robin.
    SessionAffinity(AtomicU64),
}

/// A request's hold on the replica it was routed to; dropping it ends the request there.
#[derive(Debug)]
pub(crate) struct Lease {
    index: usize,
    outstanding: Option<Arc<Mutex<Vec<u32>>>>,
}

impl Lease {
    /// The replica's index, from 0.
    pub(crate) fn index(&self) -> usize {
        self.index
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(counts) = &self.outstanding {
            let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
            c[self.index] = c[self.index].saturating_sub(1);
        }
    }
}

impl Replicas {
    /// How many replicas `config` runs: `replicas`, but one in zero-delay mode (no engine,
    /// nothing to spread).
    pub(crate) fn count(config: &MockConfig) -> usize {
        if config.is_zero_delay() {
            1
        } else {
            config.replicas as usize
        }
    }

    /// Starts [`Replicas::count`] replicas, each with its engine (none in zero-delay mode)
    /// writing its gauges in `metrics`. Returns the engines' tasks.
    pub(crate) fn start(
        config: &MockConfig,
        served: Option<&Arc<crate::lora::ServedModels>>,
        metrics: &Arc<Metrics>,
    ) -> (Self, Vec<tokio::task::JoinHandle<()>>) {
        let zero_delay = config.is_zero_delay();
        let params = EngineParams::from_config(config);
        let mut tasks = Vec::new();
        let replicas = (0..Self::count(config))
            .map(|i| {
                let engine = (!zero_delay).then(|| {
                    let (handle, task) =
                        engine::spawn_serving(params, served.cloned(), metrics.clone(), i);
                    tasks.push(task);
                    handle
                });
                Replica {
                    engine,
                    pool_slots: Semaphore::new(config.max_batch as usize),
                }
            })
            .collect();
        (Self::new(replicas, config.balance), tasks)
    }

    fn new(replicas: Vec<Replica>, policy: Balance) -> Self {
        let router = match policy {
            _ if replicas.len() == 1 => Router::Single,
            Balance::RoundRobin => Router::RoundRobin(AtomicU64::new(0)),
            Balance::LeastOutstanding => {
                Router::LeastOutstanding(Arc::new(Mutex::new(vec![0; replicas.len()])))
            }
            Balance::SessionAffinity => Router::SessionAffinity(AtomicU64::new(0)),
        };
        Self { replicas, router }
    }

    /// How many replicas serve (1 in zero-delay mode).
    pub(crate) fn len(&self) -> usize {
        self.replicas.len()
    }

    /// Routes a request arriving now to a replica.
    pub(crate) fn route(&self) -> Lease {
        self.route_keyed(None)
    }

    /// Routes a request arriving now, whose session key (the affinity header's value) is
    /// `key`, to a replica.
    pub(crate) fn route_keyed(&self, key: Option<&[u8]>) -> Lease {
        let n = self.replicas.len();
        match &self.router {
            Router::SessionAffinity(routed) => Lease {
                index: match key {
                    Some(k) => bench_core::affinity_index(k, n),
                    None => (routed.fetch_add(1, Ordering::Relaxed) % n as u64) as usize,
                },
                outstanding: None,
            },
            Router::Single => Lease {
                index: 0,
                outstanding: None,
            },
            Router::RoundRobin(routed) => {
                let turn = routed.fetch_add(1, Ordering::Relaxed);
                Lease {
                    index: (turn % self.replicas.len() as u64) as usize,
                    outstanding: None,
                }
            }
            Router::LeastOutstanding(counts) => {
                let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
                let index = least(&c);
                c[index] += 1;
                Lease {
                    index,
                    outstanding: Some(counts.clone()),
                }
            }
        }
    }

    /// The replica a lease is on.
    pub(crate) fn get(&self, lease: &Lease) -> &Replica {
        &self.replicas[lease.index]
    }
}

/// The index of the smallest count, the lowest among equals.
fn least(counts: &[u32]) -> usize {
    counts
        .iter()
        .enumerate()
        .min_by_key(|&(i, c)| (*c, i))
        .map_or(0, |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    use crate::prefix::Blocks;

    fn replicas(n: usize, policy: Balance) -> Replicas {
        let r = (0..n)
            .map(|_| Replica {
                engine: None,
                pool_slots: Semaphore::new(1),
            })
            .collect();
        Replicas::new(r, policy)
    }

    #[test]
    fn round_robin_takes_turns_by_arrival() {
        let r = replicas(3, Balance::RoundRobin);
        let got: Vec<usize> = (0..7).map(|_| r.route().index()).collect();
        assert_eq!(got, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn session_affinity_keeps_a_key_on_one_replica() {
        let r = replicas(3, Balance::SessionAffinity);
        for key in ["0", "1", "2", "17", "a-session"] {
            let first = r.route_keyed(Some(key.as_bytes())).index();
            assert_eq!(first, bench_core::affinity_index(key.as_bytes(), 3));
            assert!((0..5).all(|_| r.route_keyed(Some(key.as_bytes())).index() == first));
        }
        let spread: std::collections::BTreeSet<usize> = (0..30)
            .map(|k| r.route_keyed(Some(k.to_string().as_bytes())).index())
            .collect();
        assert_eq!(spread.len(), 3, "keys spread over every replica");
        let got: Vec<usize> = (0..4).map(|_| r.route().index()).collect();
        assert_eq!(got, [0, 1, 2, 0], "no key: in turn");
    }

    #[test]
    fn least_outstanding_takes_the_least_loaded_lowest_first() {
        let r = replicas(3, Balance::LeastOutstanding);
        let a = r.route();
        let b = r.route();
        let c = r.route();
        assert_eq!((a.index(), b.index(), c.index()), (0, 1, 2));
        let d = r.route();
        assert_eq!(d.index(), 0, "all equal: the lowest index");
        drop(b);
        assert_eq!(r.route().index(), 1, "replica 1 ended a request");
        drop((a, d));
        // Replicas 0 and 1 are idle now, 2 holds one.
        let e = r.route();
        let f = r.route();
        assert_eq!((e.index(), f.index()), (0, 1));
        assert_eq!(r.route().index(), 0, "all hold one: the lowest index");
        drop(c);
        assert_eq!(r.route().index(), 2);
        drop((e, f));
    }

    /// What an open-loop run measured.
    struct Outcome {
        /// Requests over the time from the first arrival to the last completion, req/s.
        throughput: f64,
        /// Engine arrival to first token, ms: mean and 99th percentile.
        mean_ttft_ms: f64,
        p99_ttft_ms: f64,
    }

    /// What each request of an open-loop run asks for.
    #[derive(Debug, Clone, Copy)]
    struct Workload {
        prompt: u32,
        /// Mean output tokens `n`: every request gets exactly `n`, or (`mixed`) `n / 4` or
        /// `7n / 4` with equal odds.
        tokens: u32,
        mixed: bool,
    }

    impl Workload {
        fn draw(self, rng: &mut crate::faults::Rng) -> u32 {
            match (self.mixed, rng.unit() < 0.5) {
                (false, _) => self.tokens,
                (true, true) => self.tokens / 4,
                (true, false) => self.tokens * 7 / 4,
            }
        }
    }

    /// `requests` Poisson arrivals at `rate` req/s (seeded) on the paused clock, each asking
    /// for `w`, routed by `config`'s replicas and policy, each lease held until its last token.
    async fn open_loop(config: &MockConfig, rate: f64, requests: usize, w: Workload) -> Outcome {
        let metrics = Arc::new(Metrics::new(
            "m",
            config.kv_cache_tokens,
            Replicas::count(config),
        ));
        let (replicas, tasks) = Replicas::start(config, None, &metrics);
        let mut rng = crate::faults::Rng::new(config.seed, 0);
        let t0 = tokio::time::Instant::now();
        let mut at = t0;
        let mut seqs = Vec::with_capacity(requests);
        for _ in 0..requests {
            at += Duration::from_secs_f64(-(1.0 - rng.unit()).ln() / rate);
            tokio::time::sleep_until(at).await;
            let lease = replicas.route();
            let engine = replicas.get(&lease).engine.as_ref().expect("timed engine");
            let tokens = w.draw(&mut rng);
            let seq = engine.submit(w.prompt, tokens, Blocks::default());
            let arrival = at;
            seqs.push(tokio::spawn(async move {
                seq.wait_for(1).await;
                let ttft = arrival.elapsed();
                seq.wait_for(tokens).await;
                drop(lease);
                (ttft, tokio::time::Instant::now())
            }));
        }
        let mut ttfts = Vec::with_capacity(requests);
        let mut end = t0;
        for s in seqs {
            let (ttft, done) = s.await.expect("sequence");
            ttfts.push(ttft.as_secs_f64() * 1e3);
            end = end.max(done);
        }
        tasks.iter().for_each(|t| t.abort());
        ttfts.sort_by(f64::total_cmp);
        Outcome {
            throughput: requests as f64 / (end - t0).as_secs_f64(),
            mean_ttft_ms: ttfts.iter().sum::<f64>() / ttfts.len() as f64,
            p99_ttft_ms: ttfts[(ttfts.len() * 99).div_ceil(100) - 1],
        }
    }

    /// One replica's closed-form capacity, req/s (docs/simulator.md, "Steady-state capacity";
    /// a slot's cycle is affine in `n`, so mixed sizes have the capacity of their mean).
    fn capacity(config: &MockConfig, w: Workload) -> f64 {
        let s = config.step_base_ms + config.step_per_seq_ms * f64::from(config.max_batch);
        let p = config.prefill_overhead_ms + 1e3 * f64::from(w.prompt) / config.prefill_rate;
        let c = ((p / s).ceil() + f64::from(w.tokens) - 1.0) * s;
        f64::from(config.max_batch) / (c / 1e3)
    }

    /// Arrivals per replica in an open-loop run.
    const REQUESTS: usize = 1000;

    /// Open-loop Poisson load at `load` x N x one replica's closed-form capacity on N = 2 and
    /// 4 replicas of `base` under each policy, against one replica at the same load; prints the
    /// figures of docs/simulator.md, "Replicas" (`-- --nocapture`).
    async fn departure_from_linear(name: &str, base: &MockConfig, w: Workload) {
        let cap = capacity(base, w);
        for load in [0.9, 1.0] {
            let one = open_loop(base, load * cap, REQUESTS, w).await;
            eprintln!(
                "{name}, load {load}: 1 replica: {:.3} x capacity, TTFT mean {:.1} ms, p99 {:.1} ms",
                one.throughput / cap,
                one.mean_ttft_ms,
                one.p99_ttft_ms
            );
            for n in [2u32, 4] {
                let mut mean_ttft = Vec::new();
                for balance in Balance::ALL {
                    let config = MockConfig {
                        replicas: n,
                        balance,
                        ..base.clone()
                    };
                    let rate = load * f64::from(n) * cap;
                    let o = open_loop(&config, rate, REQUESTS * n as usize, w).await;
                    let linear = o.throughput / (f64::from(n) * one.throughput);
                    eprintln!(
                        "{name}, load {load}: {n} x {balance}: {:.3} x N x capacity ({linear:.3} x linear), TTFT mean {:.1} ms, p99 {:.1} ms",
                        o.throughput / (f64::from(n) * cap),
                        o.mean_ttft_ms,
                        o.p99_ttft_ms
                    );
                    // Spread over the N replicas, the load is carried; all on one, it is not.
                    assert!(
                        linear > 0.95,
                        "{n} x {balance} at {load}: {linear:.3} x linear"
                    );
                    mean_ttft.push(o.mean_ttft_ms);
                }
                // Requests of mixed sizes: round-robin queues short ones behind long ones on a
                // busy replica while another has room (1.15 to 2.3 times the wait, measured).
                assert!(
                    !w.mixed || mean_ttft[1] < mean_ttft[0],
                    "{name}, {n} replicas at {load}: mean TTFT {mean_ttft:?} (round-robin, least-outstanding)"
                );
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn open_loop_departure_from_linear() {
        // The default engine (batch 64), 64-token prompts, 32-token outputs (or 8 and 56).
        let default = MockConfig {
            seed: 7,
            ..MockConfig::default()
        };
        for mixed in [false, true] {
            let w = Workload {
                prompt: 64,
                tokens: 32,
                mixed,
            };
            let name = if mixed { "default, mixed" } else { "default" };
            departure_from_linear(name, &default, w).await;
        }
        // capacity.rs's small engine (batch 4, S = 18 ms), 64-token prompts, 16-token outputs
        // (or 4 and 28).
        let small = MockConfig {
            max_batch: 4,
            step_base_ms: 14.0,
            step_per_seq_ms: 1.0,
            prefill_overhead_ms: 5.0,
            prefill_rate: 2000.0,
            ..default
        };
        for mixed in [false, true] {
            let w = Workload {
                prompt: 64,
                tokens: 16,
                mixed,
            };
            let name = if mixed { "small, mixed" } else { "small" };
            departure_from_linear(name, &small, w).await;
        }
    }

    #[test]
    fn one_replica_counts_nothing() {
        for policy in Balance::ALL {
            let r = replicas(1, policy);
            assert!(matches!(r.router, Router::Single));
            assert!((0..3).all(|_| r.route().index() == 0));
        }
        assert_eq!(least(&[3, 1, 1, 2]), 1);
    }
}
