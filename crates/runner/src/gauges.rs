//! The server's and the GPUs' gauges as they stand, for the caller's observer
//! ([`crate::Events::server_gauges`]): read from the scrapers' recent scrapes about once a
//! second by the task that relays progress, never by the run's collector or on a request's
//! path.

use std::sync::Arc;

use bench_core::{Clock, Nanos};
use bench_servermetrics::{Scraper, Span};

/// How far back the reading looks for periodic scrapes at least: a few of the default 1 s
/// interval (and always two and a half intervals).
const LOOKBACK: Nanos = 3_000_000_000;

/// The server's gauges at its latest scrape, and the GPUs' mean power over the last few
/// seconds: each `None` when not scraped (or not exposed by the server).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerGauges {
    /// Requests the server is running.
    pub running: Option<f64>,
    /// Requests waiting in its queue.
    pub waiting: Option<f64>,
    /// Fraction 0..1 of its KV cache in use.
    pub kv_usage: Option<f64>,
    /// All the GPUs' power together, watts (`--gpu-metrics`).
    pub gpu_power_w: Option<f64>,
}

/// What reads the gauges: the scrapers (shared with the report's observer) and the run clock.
#[derive(Clone)]
pub(crate) struct Gauges {
    pub(crate) server: Option<Arc<Scraper>>,
    pub(crate) gpus: Vec<Arc<Scraper>>,
    pub(crate) clock: Clock,
    /// How far back to look: [`LOOKBACK`], or 2.5 scrape intervals when longer.
    pub(crate) lookback: Nanos,
}

/// The look-back for scrapes `interval_s` apart.
pub(crate) fn lookback(interval_s: f64) -> Nanos {
    LOOKBACK.max((interval_s * 2.5e9) as Nanos)
}

impl Gauges {
    /// The gauges over the last look-back (the server's at its latest periodic scrape in it,
    /// the GPUs' power its mean); `None` when nothing was scraped in it.
    pub(crate) fn read(&self) -> Option<ServerGauges> {
        if self.server.is_none() && self.gpus.is_empty() {
            return None;
        }
        let now = self.clock.now();
        let from = now.saturating_sub(self.lookback);
        let span = Span {
            start: from,
            end: now,
            open: from,
            close: now,
        };
        let server = self.server.as_ref().and_then(|s| s.summarize(span));
        let summary = server.as_ref().map(|m| &m.summary);
        let last = |g: Option<&bench_servermetrics::GaugeSummary>| g.map(|g| g.last);
        let nodes = self.gpus.iter().filter_map(|s| s.gpu_node(span)).collect();
        let g = ServerGauges {
            running: summary.and_then(|s| last(s.running.as_ref())),
            waiting: summary.and_then(|s| last(s.waiting.as_ref())),
            kv_usage: summary.and_then(|s| last(s.kv_usage.as_ref())),
            gpu_power_w: bench_servermetrics::gpu::combine(nodes, 0, 0)
                .and_then(|m| m.power_w_mean),
        };
        (g != ServerGauges::default()).then_some(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulator's /metrics and DCGM exporter, read as they stand: idle, it runs and
    /// queues nothing, and its GPUs draw their idle power (`gpu_idle_w`, 100 W by default).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_gauges_are_the_simulators_at_its_last_scrape() {
        let mock = bench_mock::MockServer::start(bench_mock::MockConfig::default())
            .await
            .expect("simulator");
        let clock = Clock::start();
        let scraper = |path: &str| {
            let mut opts = bench_servermetrics::ScrapeOptions::new(format!("{}{path}", mock.url()));
            opts.interval = std::time::Duration::from_millis(20);
            Arc::new(Scraper::spawn(opts, clock).expect("scraper"))
        };
        let (server, gpu) = (scraper("/metrics"), scraper("/dcgm/metrics"));
        let none = Gauges {
            server: None,
            gpus: Vec::new(),
            clock,
            lookback: lookback(0.02),
        };
        assert_eq!(none.read(), None);
        let gauges = Gauges {
            server: Some(server),
            gpus: vec![gpu],
            clock,
            lookback: lookback(0.02),
        };
        // Gauges are read from periodic scrapes: wait for both scrapers' first.
        let mut g = gauges.read();
        for _ in 0..500 {
            if g.is_some_and(|g| g.running.is_some() && g.gpu_power_w.is_some()) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            g = gauges.read();
        }
        let g = g.expect("gauges");
        assert_eq!((g.running, g.waiting), (Some(0.0), Some(0.0)));
        assert_eq!(g.kv_usage, Some(0.0));
        let watts = g.gpu_power_w.expect("power");
        assert!((watts - 100.0).abs() < 1e-9, "{watts}");
        mock.shutdown().await;
    }
}
