//! Hugging Face datasets in the local hub cache: `--data ORG/NAME` (guidellm's spelling) and
//! vLLM's `--dataset-name hf --dataset-path ORG/NAME --hf-subset S --hf-split SPLIT` resolve to
//! the parquet files of one subset and split, read like any parquet file ([`crate::parquet`]).
//!
//! The cache is the one `--processor` uses, found by the same resolver
//! ([`bench_tokenizer::hub::HubConfig::from_env`]: `HF_HUB_CACHE`, else `HF_HOME/hub`, else
//! `~/.cache/huggingface/hub`), in `huggingface_hub`'s layout:
//! `datasets--ORG--NAME/snapshots/<commit>/<the repository's files>`, with `refs/main` (and
//! `refs/convert/parquet` for the hub's parquet conversion) naming the commits. Two layouts of
//! parquet files are read:
//!
//! - the repository's own files: `[<subset>/]<split>-NNNNN-of-NNNNN.parquet` or
//!   `[<subset>/]<split>.parquet` (a `data/` folder is the `default` subset);
//! - the `refs/convert/parquet` branch: `<subset>/<split>/NNNN.parquet`.
//!
//! bench reads the cache only: it never downloads a dataset. A dataset that is not there is an
//! error saying how to fetch it with `huggingface-cli`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::Error;

/// The split read when none is named (vLLM's `--hf-split` default).
pub const DEFAULT_SPLIT: &str = "train";

/// One parquet file of a dataset snapshot, classified.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Shard {
    subset: String,
    split: String,
    /// The pattern (or file) that names this shard's split in its folder.
    pattern: PathBuf,
}

/// The `datasets--ORG--NAME` folder of `id` under `cache`.
fn dataset_folder(cache: &Path, id: &str) -> PathBuf {
    cache.join(format!("datasets--{}", id.replace('/', "--")))
}

/// The snapshots to look in, best first: the commits of `refs/main` and
/// `refs/convert/parquet`, then every other snapshot in name order.
fn snapshots(repo: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for r in ["main", "convert/parquet"] {
        if let Ok(commit) = std::fs::read_to_string(repo.join("refs").join(r)) {
            let c = commit.trim();
            if !c.is_empty() && c.chars().all(|ch| ch.is_ascii_alphanumeric()) {
                out.push(repo.join("snapshots").join(c));
            }
        }
    }
    let mut rest: Vec<PathBuf> = std::fs::read_dir(repo.join("snapshots"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    rest.sort();
    out.extend(rest);
    out.retain(|p| p.is_dir());
    out.dedup();
    out
}

/// Every `.parquet` file under `dir`, at most `depth` folders down.
fn parquet_files(dir: &Path, depth: u32, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() && depth > 0 {
            parquet_files(&p, depth - 1, out);
        } else if crate::parquet::is_parquet(&p) && p.is_file() {
            out.push(p);
        }
    }
}

/// The subset, split and pattern of a parquet file at `rel` (relative to the snapshot).
fn classify(snapshot: &Path, file: &Path) -> Option<Shard> {
    let rel = file.strip_prefix(snapshot).ok()?;
    let name = rel.file_name()?.to_str()?;
    let stem = name.strip_suffix(".parquet")?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    let dirs: Vec<&str> = parent.iter().filter_map(|c| c.to_str()).collect();
    let folder = snapshot.join(parent);
    // The conversion branch: <subset>/<split>/NNNN.parquet.
    if !stem.is_empty() && stem.chars().all(|c| c.is_ascii_digit()) {
        if let [.., subset, split] = dirs.as_slice() {
            return Some(Shard {
                subset: (*subset).to_string(),
                split: (*split).to_string(),
                pattern: folder.join("*.parquet"),
            });
        }
    }
    // The repository's files: [<subset>/]<split>[-NNNNN-of-NNNNN].parquet.
    let (split, pattern) = match stem.split_once('-') {
        Some((split, _)) => (split, folder.join(format!("{split}-*.parquet"))),
        None => (stem, folder.join(name)),
    };
    let subset = match dirs.last() {
        None | Some(&"data") => "default",
        Some(d) => d,
    };
    Some(Shard {
        subset: subset.to_string(),
        split: split.to_string(),
        pattern,
    })
}

fn list(items: &BTreeSet<&str>) -> String {
    items.iter().copied().collect::<Vec<_>>().join(", ")
}

/// The parquet pattern of dataset `id`'s `subset` and `split` in the hub cache at `cache`.
/// Errors name the dataset and what is missing: the dataset itself (with the command that
/// fetches it), the subset or the split (with those found).
pub fn resolve(
    cache: &Path,
    id: &str,
    subset: Option<&str>,
    split: Option<&str>,
) -> Result<PathBuf, Error> {
    let repo = dataset_folder(cache, id);
    let mut shards = Vec::new();
    for snap in snapshots(&repo) {
        let mut files = Vec::new();
        parquet_files(&snap, 4, &mut files);
        shards.extend(files.iter().filter_map(|f| classify(&snap, f)));
        if !shards.is_empty() {
            break;
        }
    }
    if shards.is_empty() {
        return Err(Error::Spec(format!(
            "{id}: no such data file, and no parquet files of dataset {id} in the Hugging Face \
             cache ({}); bench reads the cache only: fetch it with `huggingface-cli download --repo-type dataset {id}` (or, for a \
             dataset stored in another format, `--revision refs/convert/parquet`), or set \
             HF_HUB_CACHE / HF_HOME",
            repo.display()
        )));
    }
    let subsets: BTreeSet<&str> = shards.iter().map(|s| s.subset.as_str()).collect();
    let subset = match subset {
        Some(s) if subsets.contains(s) => s,
        Some(s) => {
            return Err(Error::Spec(format!(
                "dataset {id} has no subset {s:?} in the cache (subsets: {})",
                list(&subsets)
            )))
        }
        None if subsets.len() == 1 => subsets.iter().next().copied().unwrap_or("default"),
        None if subsets.contains("default") => "default",
        None => {
            return Err(Error::Spec(format!(
            "dataset {id} has several subsets ({}); choose one with subset= (vLLM: --hf-subset)",
            list(&subsets)
        )))
        }
    };
    let split = split.unwrap_or(DEFAULT_SPLIT);
    let in_subset: Vec<&Shard> = shards.iter().filter(|s| s.subset == subset).collect();
    match in_subset.iter().find(|s| s.split == split) {
        Some(s) => Ok(s.pattern.clone()),
        None => {
            let splits: BTreeSet<&str> = in_subset.iter().map(|s| s.split.as_str()).collect();
            Err(Error::Spec(format!(
                "dataset {id} subset {subset:?} has no split {split:?} in the cache (splits: {}); \
                 choose one with split= (vLLM: --hf-split)",
                list(&splits)
            )))
        }
    }
}

/// Whether `s` has the shape of a dataset id, `ORG/NAME` (the hub's rule for repository ids;
/// a bare `NAME` is not taken for one, so that a missing file stays a missing file).
pub fn is_dataset_id(s: &str) -> bool {
    s.matches('/').count() == 1 && bench_tokenizer::hub::is_model_id(s)
}
