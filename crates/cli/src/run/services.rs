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
pub(super) async fn start_mock(
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
pub(super) async fn start_clock(
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

/// Starts scraping the server's metrics (unless turned off) and takes the first scrape, the
/// base of the first benchmark's counters.
pub(super) async fn start_scraper(
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
