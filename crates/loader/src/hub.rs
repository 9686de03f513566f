//! Hugging Face datasets in the local hub cache: `--data ORG/NAME` (guidellm's spelling) and
//! vLLM's `--dataset-name hf --dataset-path ORG/NAME --hf-subset S --hf-split SPLIT` resolve to
//! the parquet files of one subset and split, read like any parquet file (`crate::parquet`).
//!
//! The cache is the one `--processor` uses, found by the same resolver
//! ([`bench_tokenizer::hub::HubConfig::from_env`]: `HF_HUB_CACHE`, else `HF_HOME/hub`, else
//! `~/.cache/huggingface/hub`), in `huggingface_hub`'s layout:
//! `datasets--ORG--NAME/snapshots/<commit>/<the repository's files>`, with `refs/main` (and
//! `refs/refs/convert/parquet` for the hub's parquet conversion, a revision's ref file being
//! `refs/<revision>`) naming the commits. Two layouts of
//! parquet files are read:
//!
//! - the repository's own files: `[<subset>/]<split>-NNNNN-of-NNNNN.parquet` or
//!   `[<subset>/]<split>.parquet` (a `data/` folder is the `default` subset);
//! - the `refs/convert/parquet` branch: `<subset>/<split>/NNNN.parquet`.
//!
//! A dataset (or a subset or split of it) that is not in the cache is downloaded into it
//! ([`resolve_or_download`]) unless `HF_HUB_OFFLINE` is set: only the parquet files of the
//! chosen subset and split.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bench_tokenizer::hub::{datasets, HubConfig};

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
    datasets::folder(cache, id)
}

/// The snapshots to look in, best first: the commits of `refs/main` and
/// `refs/refs/convert/parquet`, then every other snapshot in name order.
fn snapshots(repo: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    // huggingface_hub stores the ref of revision R at refs/R: the conversion branch's is
    // refs/refs/convert/parquet.
    for r in ["main", "refs/convert/parquet"] {
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
    // The first snapshot holding the chosen subset and split; else the first one's error.
    let mut first_error = None;
    for snap in snapshots(&repo) {
        let mut files = Vec::new();
        parquet_files(&snap, 4, &mut files);
        let shards: Vec<Shard> = files.iter().filter_map(|f| classify(&snap, f)).collect();
        if shards.is_empty() {
            continue;
        }
        match choose(&shards, id, subset, split, "in the cache") {
            Ok(chosen) => return Ok(chosen[0].pattern.clone()),
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    Err(first_error.unwrap_or_else(|| {
        Error::Spec(format!(
            "{id}: no such data file, and no parquet files of dataset {id} in the Hugging Face \
             cache ({}); unset HF_HUB_OFFLINE to let bench download them, or fetch them with \
             `huggingface-cli download --repo-type dataset {id}` (for a dataset stored in \
             another format, add `--revision refs/convert/parquet`), or set HF_HUB_CACHE / HF_HOME",
            repo.display()
        ))
    }))
}

/// The shards of the chosen subset and split: `subset` (by default the only one, else
/// `default`) and `split` (default [`DEFAULT_SPLIT`]); errors name what exists `where_`.
fn choose<'a>(
    shards: &'a [Shard],
    id: &str,
    subset: Option<&str>,
    split: Option<&str>,
    where_: &str,
) -> Result<Vec<&'a Shard>, Error> {
    let subsets: BTreeSet<&str> = shards.iter().map(|s| s.subset.as_str()).collect();
    let subset = match subset {
        Some(s) if subsets.contains(s) => s,
        Some(s) => {
            return Err(Error::Spec(format!(
                "dataset {id} has no subset {s:?} {where_} (subsets: {})",
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
    let chosen: Vec<&Shard> = in_subset
        .iter()
        .copied()
        .filter(|s| s.split == split)
        .collect();
    if chosen.is_empty() {
        let splits: BTreeSet<&str> = in_subset.iter().map(|s| s.split.as_str()).collect();
        return Err(Error::Spec(format!(
            "dataset {id} subset {subset:?} has no split {split:?} {where_} (splits: {}); \
             choose one with split= (vLLM: --hf-split)",
            list(&splits)
        )));
    }
    Ok(chosen)
}

/// [`resolve`] in the cache of `config`; when that fails and `config` is not offline
/// (`HF_HUB_OFFLINE`), the parquet files of the chosen subset and split are downloaded from
/// the Hub (`HF_ENDPOINT`, with `HF_TOKEN`) into the cache first: those of the `main`
/// revision, else those of the Hub's parquet conversion (`refs/convert/parquet`).
pub fn resolve_or_download(
    config: &HubConfig,
    id: &str,
    subset: Option<&str>,
    split: Option<&str>,
) -> Result<PathBuf, Error> {
    let cached = resolve(&config.cache, id, subset, split);
    if cached.is_ok() || config.offline {
        return cached;
    }
    download(config, id, subset, split)?;
    resolve(&config.cache, id, subset, split)
}

/// Downloads the parquet files of `id`'s chosen subset and split from the first revision that
/// has parquet files; an error names what the Hub has otherwise.
fn download(
    config: &HubConfig,
    id: &str,
    subset: Option<&str>,
    split: Option<&str>,
) -> Result<(), Error> {
    let mut last = None;
    for revision in ["main", "refs/convert/parquet"] {
        let (sha, files) = match datasets::files(config, id, revision) {
            Ok(f) => f,
            // The conversion branch may not exist: what main said stands.
            Err(e) if revision != "main" => {
                last = last.or(Some(Error::from(e)));
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let shards: Vec<(Shard, &String)> = files
            .iter()
            .filter_map(|f| classify(Path::new(""), Path::new(f)).map(|s| (s, f)))
            .collect();
        if shards.is_empty() {
            continue;
        }
        let all: Vec<Shard> = shards.iter().map(|(s, _)| s.clone()).collect();
        match choose(&all, id, subset, split, "on the Hub") {
            Ok(chosen) => {
                for (shard, file) in &shards {
                    if chosen.contains(&shard) {
                        datasets::download(config, id, revision, &sha, file)?;
                    }
                }
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        Error::Spec(format!(
            "dataset {id} has no parquet files on the Hub (neither in main nor in its parquet \
             conversion)"
        ))
    }))
}

/// Whether `s` has the shape of a dataset id, `ORG/NAME` (the hub's rule for repository ids).
/// A bare `NAME`, or a name ending in a data file's extension (`dir/prompts.jsonl`), is not
/// taken for one, so that a missing file stays a missing file.
pub fn is_dataset_id(s: &str) -> bool {
    let file_like = std::path::Path::new(s)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| {
            [
                "jsonl", "json", "csv", "txt", "parquet", "ndjson", "arrow", "yaml", "yml",
            ]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
        });
    s.matches('/').count() == 1 && !file_like && bench_tokenizer::hub::is_model_id(s)
}
