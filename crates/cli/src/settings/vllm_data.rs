//! vLLM's `--dataset-name` values, each turned into bench's own `--data` argument (the keys of
//! docs/data.md), with the flags that belong to each name (docs/cli.md, "Flags of the peers").

use super::args::PeerArgs;
use super::usage;

/// The names `--dataset-name` takes, as an unsupported one's error lists them.
pub(super) const SUPPORTED: &str = "random, sharegpt, book, custom, hf";

/// The `--data` argument of vLLM's `--dataset-name NAME` and its flags.
pub(super) fn data_arg(p: &PeerArgs, name: &str) -> anyhow::Result<String> {
    let path = || {
        p.dataset_path
            .clone()
            .ok_or_else(|| usage(format!("--dataset-name {name} needs --dataset-path FILE")))
    };
    Ok(match name {
        "random" => {
            let mut s = format!(
                "input_len={},output_len={}",
                p.random_input_len.unwrap_or(1024),
                p.random_output_len.unwrap_or(128)
            );
            if let Some(r) = p.random_range_ratio.filter(|r| *r != 0.0) {
                s.push_str(&format!(",range_ratio={r}"));
            }
            if let Some(n) = p.random_prefix_len.filter(|n| *n != 0) {
                s.push_str(&format!(",prefix_len={n}"));
            }
            s
        }
        "sharegpt" => with_output(
            format!("path={},format=sharegpt", path()?),
            p.sharegpt_output_len,
        ),
        "book" => with_output(
            format!(
                "path={},format=book,prompt_tokens={}",
                path()?,
                p.book_input_len.unwrap_or(1024)
            ),
            p.book_output_len,
        ),
        "custom" | "jsonl" | "json" | "csv" | "txt" => format!("path={}", path()?),
        "hf" => hf(p, path()?)?,
        other => {
            return Err(usage(format!(
                "--dataset-name {other}: not supported (supported: {SUPPORTED}); pass a file with --data"
            )))
        }
    })
}

fn with_output(mut s: String, output: Option<u32>) -> String {
    if let Some(n) = output {
        s.push_str(&format!(",output_tokens={n}"));
    }
    s
}

/// `hf`: a Hugging Face dataset, `path=ORG/NAME` with its subset, split and output length.
fn hf(p: &PeerArgs, id: String) -> anyhow::Result<String> {
    let mut s = format!("path={id}");
    for (key, flag, v) in [
        ("subset", "--hf-subset", &p.hf_subset),
        ("split", "--hf-split", &p.hf_split),
    ] {
        if let Some(v) = v {
            if v.contains(',') || v.trim().is_empty() {
                return Err(usage(format!("{flag} {v:?}: not a subset or split name")));
            }
            s.push_str(&format!(",{key}={}", v.trim()));
        }
    }
    Ok(with_output(s, p.hf_output_len))
}

/// The flags of one dataset name given with another: a usage error naming them.
pub(super) fn check_flags(p: &PeerArgs, name: &str) -> anyhow::Result<()> {
    let hf = p.hf_subset.is_some() || p.hf_split.is_some() || p.hf_output_len.is_some();
    if hf && name != "hf" {
        return Err(usage(format!(
            "--hf-* flags apply to --dataset-name hf, not {name}"
        )));
    }
    Ok(())
}
