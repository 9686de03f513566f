//! `--save-result`: vLLM's result file per benchmark, written after each benchmark beside
//! bench's own files (the figures come from `bench_report::vllm_result`).

use std::path::PathBuf;

use bench_report::{BenchmarkReport, VllmResultMeta};
use bench_worker::BackendKind;

use crate::settings::{Settings, VllmResult};

/// Where and what to write.
#[derive(Debug)]
pub struct VllmFiles {
    meta: VllmResultMeta,
    dir: Option<PathBuf>,
    /// `--result-filename`: every benchmark goes into this one file, one JSON object per line
    /// (one benchmark: exactly vLLM's file; several: vLLM's `--append-result` form).
    filename: Option<String>,
    written: Vec<serde_json::Value>,
}

/// vLLM's name for a backend.
fn vllm_backend(b: BackendKind) -> &'static str {
    match b {
        BackendKind::OpenAiCompletions => "openai",
        BackendKind::OpenAiChat => "openai-chat",
        BackendKind::Tgi => "tgi",
        BackendKind::OpenAiResponses => "openai-responses",
        BackendKind::AnthropicMessages => "anthropic-messages",
        BackendKind::OpenAiEmbeddings => "openai-embeddings",
        BackendKind::Rerank => "vllm-rerank",
        BackendKind::CohereRerank => "cohere-rerank",
    }
}

/// vLLM's `date` (local time when the offset is known, else UTC).
fn vllm_date() -> String {
    let now = time::OffsetDateTime::now_local().unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    let f = time::macros::format_description!("[year][month][day]-[hour][minute][second]");
    now.format(&f).unwrap_or_default()
}

impl VllmFiles {
    /// The writer for a run of `s` against `model`, or `None` without `--save-result`.
    pub fn new(s: &Settings, model: &str) -> Option<VllmFiles> {
        let VllmResult { dir, filename } = s.report.save_result.clone()?;
        let o = &s.report.vllm_console;
        Some(VllmFiles {
            meta: VllmResultMeta {
                backend: vllm_backend(s.target.backend).to_string(),
                label: s.report.label.clone(),
                model_id: model.to_string(),
                tokenizer_id: s
                    .data
                    .processor
                    .clone()
                    .unwrap_or_else(|| model.to_string()),
                num_prompts: s.load.limits.max_requests,
                metadata: s.report.metadata.clone(),
                percentile_metrics: o.percentile_metrics.clone(),
                metric_percentiles: o.metric_percentiles.clone(),
                date: vllm_date(),
            },
            dir,
            filename,
            written: Vec::new(),
        })
    }

    /// Writes the file of benchmark `b` (atomically); returns the path written.
    pub fn write(&mut self, b: &BenchmarkReport) -> anyhow::Result<PathBuf> {
        let v = bench_report::vllm_result(b, &self.meta);
        let dir = self.dir.clone().unwrap_or_default();
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(&dir)
                .map_err(|e| anyhow::anyhow!("--result-dir {}: {e}", dir.display()))?;
        }
        let (path, text) = match &self.filename {
            Some(name) => {
                self.written.push(v);
                let lines: Vec<String> = self.written.iter().map(|v| v.to_string()).collect();
                (dir.join(name), lines.join("\n"))
            }
            None => (
                dir.join(bench_report::vllm_result_filename(b, &self.meta)),
                v.to_string(),
            ),
        };
        bench_report::write_atomic(&path, text.as_bytes())?;
        Ok(path)
    }
}
