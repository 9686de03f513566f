//! The simulated GPUs behind `GET /dcgm/metrics`: one per replica, served in NVIDIA's DCGM
//! exporter's names from a stated power model (docs/simulator.md, "GPU power model"), so that
//! `--gpu-metrics` and the energy per token have a closed form:
//!
//! - power `P = gpu_idle_w + gpu_per_seq_w x running` watts (`DCGM_FI_DEV_POWER_USAGE`), with
//!   `running` the replica's slot holders (prefilling or decoding);
//! - energy, its integral since the simulator started, in millijoules
//!   (`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`, a counter): `gpu_idle_w x t + gpu_per_seq_w x
//!   ∫ running dt`;
//! - utilization, the percent of the time since the previous scrape that a slot was held
//!   (`DCGM_FI_DEV_GPU_UTIL`; the first scrape: since the start);
//! - memory in use, `gpu_memory_mib` (`DCGM_FI_DEV_FB_USED`: an engine that reserves its KV
//!   cache at start, as vLLM does, holds the same memory loaded or idle).

use std::fmt::Write as _;
use std::sync::Mutex;

use tokio::time::Instant;

use crate::metrics::Metrics;

/// The power model and what utilization is measured since.
#[derive(Debug)]
pub(crate) struct GpuExporter {
    idle_w: f64,
    per_seq_w: f64,
    memory_mib: f64,
    start: Instant,
    /// Per replica: the previous scrape's time and busy seconds.
    last: Mutex<Vec<(Instant, f64)>>,
}

impl GpuExporter {
    pub(crate) fn new(c: &crate::MockConfig, replicas: usize) -> Self {
        let start = Instant::now();
        Self {
            idle_w: c.gpu_idle_w,
            per_seq_w: c.gpu_per_seq_w,
            memory_mib: c.gpu_memory_mib,
            start,
            last: Mutex::new(vec![(start, 0.0); replicas.max(1)]),
        }
    }

    /// The exposition, one series per replica's GPU.
    pub(crate) fn render(&self, metrics: &Metrics) -> String {
        let now = Instant::now();
        let t = now.saturating_duration_since(self.start).as_secs_f64();
        let held = metrics.held();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let mut rows: Vec<[f64; 4]> = Vec::with_capacity(held.len());
        for (i, h) in held.iter().enumerate() {
            let (at, busy) = last.get(i).copied().unwrap_or((self.start, 0.0));
            let dt = now.saturating_duration_since(at).as_secs_f64();
            let util = if dt > 0.0 {
                (100.0 * (h.busy_s - busy) / dt).clamp(0.0, 100.0)
            } else {
                0.0
            };
            if let Some(l) = last.get_mut(i) {
                *l = (now, h.busy_s);
            }
            rows.push([
                self.idle_w + self.per_seq_w * h.running as f64,
                util,
                self.memory_mib,
                1e3 * (self.idle_w * t + self.per_seq_w * h.slot_s),
            ]);
        }
        drop(last);
        let mut out = String::with_capacity(1024);
        let series = [
            ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
            ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
            (
                "DCGM_FI_DEV_FB_USED",
                "gauge",
                "Framebuffer memory used (in MiB).",
            ),
            (
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                "counter",
                "Total energy consumption since boot (in mJ).",
            ),
        ];
        for (k, (name, kind, help)) in series.into_iter().enumerate() {
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
            for (gpu, row) in rows.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{name}{{gpu=\"{gpu}\",UUID=\"GPU-bench-mock-{gpu}\",device=\"nvidia{gpu}\",modelName=\"bench mock GPU\"}} {}",
                    row[k]
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The value of `name` for GPU `gpu` in a rendered text.
    fn value(text: &str, name: &str, gpu: usize) -> f64 {
        let prefix = format!("{name}{{gpu=\"{gpu}\"");
        text.lines()
            .find(|l| l.starts_with(&prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} {gpu} not in {text}"))
    }

    #[tokio::test(start_paused = true)]
    async fn power_energy_and_utilization_follow_the_slot_holders() {
        let cfg = crate::MockConfig {
            gpu_idle_w: 100.0,
            gpu_per_seq_w: 5.0,
            gpu_memory_mib: 1000.0,
            ..crate::MockConfig::default()
        };
        let metrics = Metrics::new("m", 100, 2);
        let gpus = GpuExporter::new(&cfg, 2);
        // Replica 0: 4 holders for 2 s, then none for 2 s; replica 1: 1 holder for 4 s.
        metrics.set_queue(0, 4, 0);
        metrics.set_queue(1, 1, 0);
        tokio::time::advance(Duration::from_secs(2)).await;
        let text = gpus.render(&metrics);
        assert_eq!(value(&text, "DCGM_FI_DEV_POWER_USAGE", 0), 120.0);
        assert_eq!(value(&text, "DCGM_FI_DEV_GPU_UTIL", 0), 100.0);
        metrics.set_queue(0, 0, 0);
        tokio::time::advance(Duration::from_secs(2)).await;
        let text = gpus.render(&metrics);
        assert_eq!(value(&text, "DCGM_FI_DEV_POWER_USAGE", 0), 100.0);
        assert_eq!(value(&text, "DCGM_FI_DEV_POWER_USAGE", 1), 105.0);
        // Since the previous scrape, 2 s ago: idle throughout, and busy throughout.
        assert_eq!(value(&text, "DCGM_FI_DEV_GPU_UTIL", 0), 0.0);
        assert_eq!(value(&text, "DCGM_FI_DEV_GPU_UTIL", 1), 100.0);
        // 100 W x 4 s + 5 W x (4 x 2 s), in mJ; 100 W x 4 s + 5 W x 4 s.
        let e0 = value(&text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0);
        let e1 = value(&text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 1);
        assert!((e0 - 440_000.0).abs() < 1e-6, "{e0}");
        assert!((e1 - 420_000.0).abs() < 1e-6, "{e1}");
        assert_eq!(value(&text, "DCGM_FI_DEV_FB_USED", 1), 1000.0);
    }
}
