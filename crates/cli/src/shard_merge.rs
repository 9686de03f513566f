//! The shard results of one distributed run read and merged into one run
//! (docs/distributed.md). Used by `bench merge` and by `bench report` when its files are the
//! shards of one run.

use std::path::PathBuf;

use bench_report::{RunReport, ShardFile};

use crate::UsageError;

/// Default of `--max-skew`, seconds.
pub const DEFAULT_MAX_SKEW_S: f64 = 1.0;

/// Reads `files` and merges them; every fault is a usage error naming the file.
pub fn merge_files(files: &[PathBuf], max_skew: f64) -> anyhow::Result<RunReport> {
    if !(max_skew.is_finite() && max_skew >= 0.0) {
        return Err(UsageError::new(format!(
            "--max-skew {max_skew}: give a number of seconds, 0 or more"
        ))
        .into());
    }
    let mut shards = Vec::with_capacity(files.len());
    for f in files {
        let run = bench_report::read_run(f).map_err(|e| UsageError::new(e.to_string()))?;
        shards.push(ShardFile {
            name: f.display().to_string(),
            run,
        });
    }
    bench_report::merge_shards(shards, max_skew).map_err(|e| UsageError::new(e.to_string()).into())
}
