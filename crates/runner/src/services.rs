//! What runs beside the benchmarks: the built-in simulator (`--mock`), the scraper of the
//! server's metrics, and the run clock (from the shared start of a distributed run).

use anyhow::Context as _;
use bench_core::Clock;
use bench_mock::{MockConfig, MockServer};
use bench_tokenizer::Tokenizer;

use crate::settings::Settings;
use crate::shard::ShardPlan;
use crate::UsageError;

/// The built-in simulator of `--mock` (its config from `--mock-config`), counting with the
/// run's tokenizer unless its config names one, so that its usage figures agree with the
/// client's counts.
pub(crate) async fn start_mock(
    s: &Settings,
    tokenizer: &Tokenizer,
) -> anyhow::Result<Option<MockServer>> {
    if !s.target.mock {
        return Ok(None);
    }
    let cfg = match &s.target.mock_config {
        Some(p) => MockConfig::from_file(p)
            .map_err(|e| UsageError::new(format!("--mock-config {}: {e}", p.display())))?,
        None => MockConfig::default(),
    };
    let server = match (&cfg.tokenizer, &s.data.processor) {
        (None, Some(_)) => MockServer::start_with_tokenizer(cfg, tokenizer.clone()).await,
        _ => MockServer::start(cfg).await,
    }
    .context("starting the built-in simulator")?;
    tracing::info!(url = %server.url(), "simulator started");
    Ok(Some(server))
}

/// The run clock: from the shared start when there is one (after waiting for it), else from
/// now; with what a shard's result says of its shard.
pub(crate) async fn start_clock(
    dist: &ShardPlan,
    server: Option<bench_worker::ServerDate>,
) -> (Clock, Option<bench_report::ShardRun>) {
    let Some((at, text)) = &dist.start_at else {
        return (Clock::start(), None);
    };
    let late = crate::shard::wait_for(*at).await;
    let clock = Clock::anchored(*at);
    let shard_run = dist.shard.map(|sh| bench_report::ShardRun {
        index: sh.index,
        count: sh.count,
        start_at: Some(text.clone()),
        start_late_ms: Some(late),
        clock: Some(bench_report::ShardClock {
            wall_minus_run_start_ms: crate::shard::wall_minus_run_ms(&clock),
            wall_minus_run_end_ms: None,
            server_offset_ms: server.map(crate::shard::server_offset_ms),
        }),
    });
    (clock, shard_run)
}

/// What scrapes beside the benchmarks: the server's metrics and the GPUs' DCGM exporters.
pub(crate) struct Scrapers {
    server: Option<Watched>,
    /// One per `--gpu-metrics` URL, in the order given.
    gpus: Vec<Watched>,
}

/// A scraper, and whether its failure was warned of.
struct Watched {
    /// Shared with the live gauges' reader ([`crate::gauges`]).
    scraper: std::sync::Arc<bench_servermetrics::Scraper>,
    warned: bool,
}

impl Watched {
    fn new(scraper: bench_servermetrics::Scraper) -> Self {
        Self {
            scraper: std::sync::Arc::new(scraper),
            warned: false,
        }
    }

    /// Scrapes now (the benchmark has drained; between benchmarks, off the request path: at
    /// most the scrape timeout), then the scraper when it still works; warns once (`what`
    /// and what it means) when it failed.
    fn fresh(&mut self, what: &str, then: &str) -> Option<&bench_servermetrics::Scraper> {
        let sc = &self.scraper;
        let handle = tokio::runtime::Handle::current();
        if sc.failure().is_none()
            && handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        {
            tokio::task::block_in_place(|| handle.block_on(sc.scrape_now()));
        }
        let Some(f) = sc.failure() else {
            return Some(sc);
        };
        if !self.warned {
            self.warned = true;
            tracing::warn!("{what} from {}: {f}; {then}", sc.url());
        }
        None
    }
}

impl Scrapers {
    /// What reads their gauges as they stand, on `clock`, scraped `interval_s` apart.
    pub(crate) fn gauges(&self, clock: Clock, interval_s: f64) -> crate::gauges::Gauges {
        crate::gauges::Gauges {
            server: self.server.as_ref().map(|w| w.scraper.clone()),
            gpus: self.gpus.iter().map(|w| w.scraper.clone()).collect(),
            clock,
            lookback: crate::gauges::lookback(interval_s),
        }
    }

    /// The server's view of `[start, end]`, after a scrape taken now. Warns once when
    /// scraping failed; the report then has no server metrics.
    pub(crate) fn server_metrics(
        &mut self,
        span: bench_servermetrics::Span,
    ) -> Option<bench_servermetrics::ServerMetrics> {
        let sc = self.server.as_mut()?.fresh(
            "server metrics",
            "the report has none from this benchmark on (--no-server-metrics turns scraping off)",
        )?;
        sc.summarize(span)
    }

    /// The GPUs' view of `[start, end]` (docs/metrics.md, "GPU telemetry and energy"), after a
    /// scrape of each exporter taken now, with the benchmark's `(output tokens, completed
    /// requests)`. An exporter that failed is warned of once and left out; `None` when none
    /// is left.
    pub(crate) fn gpu_metrics(
        &mut self,
        span: bench_servermetrics::Span,
        (tokens, completed): (u64, u64),
    ) -> Option<bench_servermetrics::gpu::GpuMetrics> {
        let nodes = self
            .gpus
            .iter_mut()
            .filter_map(|w| {
                w.fresh(
                    "GPU metrics",
                    "the report has none of its GPUs from this benchmark on",
                )?
                .gpu_node(span)
            })
            .collect();
        bench_servermetrics::gpu::combine(nodes, tokens, completed)
    }
}

/// Starts every scraper and takes each one's first scrape.
pub(crate) async fn start_scrapers(
    s: &Settings,
    target: &str,
    clock: Clock,
) -> anyhow::Result<Scrapers> {
    let server = start_scraper(s, target, clock).await?;
    let mut gpus = Vec::new();
    for url in &s.report.gpu_metrics {
        let full = match url.strip_prefix('/') {
            Some(path) => bench_servermetrics::default_url(target)
                .map(|m| format!("{}/{path}", m.trim_end_matches("/metrics")))
                .ok_or_else(|| {
                    UsageError::new(format!("--gpu-metrics {url}: the target has no host"))
                })?,
            None => url.clone(),
        };
        let mut opts = bench_servermetrics::ScrapeOptions::new(full);
        opts.interval = std::time::Duration::from_secs_f64(s.report.server_metrics_interval);
        let scraper = bench_servermetrics::Scraper::spawn(opts, clock)
            .map_err(|e| UsageError::new(format!("--gpu-metrics: {e}")))?;
        scraper.scrape_now().await;
        gpus.push(Watched::new(scraper));
    }
    Ok(Scrapers {
        server: server.map(Watched::new),
        gpus,
    })
}

/// Starts scraping the server's metrics (unless turned off) and takes the first scrape, the
/// base of the first benchmark's counters.
async fn start_scraper(
    s: &Settings,
    target: &str,
    clock: Clock,
) -> anyhow::Result<Option<bench_servermetrics::Scraper>> {
    if !s.report.server_metrics {
        return Ok(None);
    }
    let url = match (
        &s.report.server_metrics_url,
        bench_servermetrics::default_url(target),
    ) {
        (Some(u), _) => u.clone(),
        (None, Some(u)) => u,
        (None, None) => return Ok(None),
    };
    let mut opts = bench_servermetrics::ScrapeOptions::new(url);
    opts.interval = std::time::Duration::from_secs_f64(s.report.server_metrics_interval);
    let scraper = bench_servermetrics::Scraper::spawn(opts, clock)
        .map_err(|e| UsageError::new(format!("--server-metrics-url: {e}")))?;
    scraper.scrape_now().await;
    Ok(Some(scraper))
}
