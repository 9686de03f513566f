//! GPU telemetry and energy from NVIDIA's DCGM exporter (`--gpu-metrics URL[,URL]`, one URL per
//! node): power, utilization and memory over a benchmark's steady window, the energy the GPUs
//! drew over the benchmark, and that energy per output token and per completed request.
//! Definitions: `docs/metrics.md`, "GPU telemetry and energy".
//!
//! Each URL is scraped by a [`crate::Scraper`] of its own on the server metrics' timeline and
//! summarized by the same rules ([`crate::summary`]): a node's series of one name are folded
//! across its GPUs (power, memory and energy summed, utilization averaged: the `_UTIL` rule of
//! [`crate::names::is_ratio_gauge`]). The nodes are then added up here.

use serde::{Deserialize, Serialize};

use crate::summary::{counter_of, gauge_of, ServerMetrics};
use crate::GaugeSummary;

/// Power draw, watts (gauge).
pub const POWER: &str = "DCGM_FI_DEV_POWER_USAGE";
/// Utilization, percent of the sample period a kernel ran (gauge).
pub const UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
/// Frame buffer memory in use, MiB (gauge).
pub const MEMORY: &str = "DCGM_FI_DEV_FB_USED";
/// Energy since the driver loaded, millijoules (counter).
pub const ENERGY: &str = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";

/// One node's GPUs over one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuNode {
    /// The scraped URL (without credentials).
    pub url: String,
    /// GPUs the exporter reported (series of the power or utilization gauge).
    pub gpus: u32,
    /// Summed over the node's GPUs, watts; over the steady window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w: Option<GaugeSummary>,
    /// Mean over the node's GPUs, percent; over the steady window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_pct: Option<GaugeSummary>,
    /// Summed over the node's GPUs, MiB; over the steady window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used_mib: Option<GaugeSummary>,
    /// Drawn by the node's GPUs from the benchmark's first request to its end (drain
    /// included), joules; absent without the energy counter or after a reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
}

/// Every node's GPUs over one benchmark, added up (`benchmarks[i].gpu_metrics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuMetrics {
    /// GPUs over every node.
    pub gpus: u32,
    /// Mean power of all the GPUs together over the steady window, watts (the sum of the
    /// nodes' time-weighted means).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_w_mean: Option<f64>,
    /// Mean utilization over the GPUs and the steady window, percent (weighted by GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization_pct_mean: Option<f64>,
    /// Mean memory in use, all GPUs together, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_used_mib_mean: Option<f64>,
    /// Energy all the GPUs drew over the benchmark, joules: present only when every node
    /// reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// `energy_j` over every output token the benchmark received (completed, incomplete,
    /// errored and cancelled requests alike: the GPUs made them all), joules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub j_per_output_token: Option<f64>,
    /// `energy_j` over the requests that completed, joules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub j_per_request: Option<f64>,
    /// Each node's own figures (their maxima are theirs alone: nodes are scraped at their
    /// own instants, so no maximum of the sum is known).
    pub nodes: Vec<GpuNode>,
}

/// One node's figures from its scraper's summary; `gpus` is the number of series of the power
/// (else the utilization) gauge at its last scrape.
pub fn node(sm: &ServerMetrics, gpus: u32) -> GpuNode {
    let m = &sm.metrics;
    GpuNode {
        url: sm.url.clone(),
        gpus,
        power_w: gauge_of(POWER, m),
        utilization_pct: gauge_of(UTIL, m),
        memory_used_mib: gauge_of(MEMORY, m),
        // A counter that went down (a reset) has no delta: no energy.
        energy_j: counter_of(ENERGY, m).map(|c| c.delta / 1e3),
    }
}

/// The nodes added up, with the energy per output token and per completed request of a
/// benchmark that received `output_tokens` and completed `completed` requests. `None` when
/// no node has any DCGM figure.
pub fn combine(nodes: Vec<GpuNode>, output_tokens: u64, completed: u64) -> Option<GpuMetrics> {
    let nodes: Vec<GpuNode> = nodes
        .into_iter()
        .filter(|n| {
            n.power_w.is_some()
                || n.utilization_pct.is_some()
                || n.memory_used_mib.is_some()
                || n.energy_j.is_some()
        })
        .collect();
    if nodes.is_empty() {
        return None;
    }
    let sum = |f: &dyn Fn(&GpuNode) -> Option<f64>| -> Option<f64> {
        nodes.iter().map(f).sum::<Option<f64>>()
    };
    let utilization_pct_mean = {
        let with: Vec<(f64, f64)> = nodes
            .iter()
            .filter_map(|n| {
                n.utilization_pct
                    .map(|u| (u.mean, f64::from(n.gpus.max(1))))
            })
            .collect();
        let w: f64 = with.iter().map(|p| p.1).sum();
        (w > 0.0).then(|| with.iter().map(|(u, g)| u * g).sum::<f64>() / w)
    };
    let energy_j = sum(&|n| n.energy_j);
    let per = |count: u64| energy_j.filter(|_| count > 0).map(|e| e / count as f64);
    Some(GpuMetrics {
        gpus: nodes.iter().map(|n| n.gpus).sum(),
        power_w_mean: sum(&|n| n.power_w.map(|g| g.mean)),
        utilization_pct_mean,
        memory_used_mib_mean: sum(&|n| n.memory_used_mib.map(|g| g.mean)),
        energy_j,
        j_per_output_token: per(output_tokens),
        j_per_request: per(completed),
        nodes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(mean: f64) -> Option<GaugeSummary> {
        Some(GaugeSummary {
            mean,
            max: mean + 1.0,
            last: mean,
        })
    }

    fn n(gpus: u32, power: f64, util: f64, energy: Option<f64>) -> GpuNode {
        GpuNode {
            url: "http://node:9400/metrics".into(),
            gpus,
            power_w: g(power),
            utilization_pct: g(util),
            memory_used_mib: g(1000.0 * f64::from(gpus)),
            energy_j: energy,
        }
    }

    #[test]
    fn nodes_add_up_and_energy_divides_by_tokens_and_completed_requests() {
        let m = combine(
            vec![
                n(8, 4000.0, 90.0, Some(40_000.0)),
                n(2, 500.0, 40.0, Some(5_000.0)),
            ],
            90_000,
            450,
        )
        .expect("figures");
        assert_eq!(m.gpus, 10);
        assert_eq!(m.power_w_mean, Some(4500.0));
        // Weighted by GPUs: (8 x 90 + 2 x 40) / 10.
        assert_eq!(m.utilization_pct_mean, Some(80.0));
        assert_eq!(m.memory_used_mib_mean, Some(10_000.0));
        assert_eq!(m.energy_j, Some(45_000.0));
        assert_eq!(m.j_per_output_token, Some(0.5));
        assert_eq!(m.j_per_request, Some(100.0));
    }

    #[test]
    fn energy_needs_every_node_and_something_to_divide_by() {
        let m = combine(
            vec![n(1, 300.0, 50.0, Some(10.0)), n(1, 300.0, 50.0, None)],
            10,
            1,
        )
        .expect("figures");
        assert_eq!((m.energy_j, m.j_per_output_token), (None, None));
        assert_eq!(m.power_w_mean, Some(600.0));
        let m = combine(vec![n(1, 300.0, 50.0, Some(10.0))], 0, 0).expect("figures");
        assert_eq!((m.j_per_output_token, m.j_per_request), (None, None));
    }

    #[test]
    fn a_node_without_dcgm_names_is_no_gpu_figure() {
        let blank = GpuNode {
            url: "http://x/metrics".into(),
            gpus: 0,
            power_w: None,
            utilization_pct: None,
            memory_used_mib: None,
            energy_j: None,
        };
        assert_eq!(combine(vec![blank], 10, 1), None);
    }
}
