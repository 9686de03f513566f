//! vLLM's `--dataset-name` values, each turned into bench's own `--data` argument (the keys of
//! docs/data.md), with the flags that belong to each name (docs/cli.md, "Flags of the peers").

use super::args::PeerArgs;
use super::usage;

/// The names `--dataset-name` takes, as an unsupported one's error lists them.
pub(super) const SUPPORTED: &str =
    "random, sharegpt, book, custom, hf, sonnet, prefix_repetition, random-mm";

/// The `--data` argument of vLLM's `--dataset-name NAME` and its flags.
pub(super) fn data_arg(p: &PeerArgs, name: &str) -> anyhow::Result<String> {
    let path = || {
        p.dataset_path
            .clone()
            .ok_or_else(|| usage(format!("--dataset-name {name} needs --dataset-path FILE")))
    };
    Ok(match name {
        "random" => random(p),
        "random-mm" => format!("{},{}", random(p), random_mm(p)?),
        "sonnet" => sonnet(p, path()?)?,
        "prefix_repetition" => format!(
            "prompt_tokens={},prefix_tokens={},prefix_count={},output_tokens={}",
            p.prefix_repetition_suffix_len.unwrap_or(256),
            p.prefix_repetition_prefix_len.unwrap_or(256),
            p.prefix_repetition_num_prefixes.unwrap_or(10),
            p.prefix_repetition_output_len.unwrap_or(128)
        ),
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

/// vLLM's `random`: the text lengths of `--random-*`.
fn random(p: &PeerArgs) -> String {
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

/// `sonnet`: a book (the text's lines) cut into slices behind its first `prefix` tokens, the
/// two adding up to `--sonnet-input-len`.
fn sonnet(p: &PeerArgs, path: String) -> anyhow::Result<String> {
    let input = p.sonnet_input_len.unwrap_or(550);
    let prefix = p.sonnet_prefix_len.unwrap_or(200);
    if input <= prefix {
        return Err(usage(format!(
            "--sonnet-input-len {input} must exceed --sonnet-prefix-len {prefix}"
        )));
    }
    Ok(format!(
        "path={path},format=book,prompt_tokens={},prefix_tokens={prefix},output_tokens={}",
        input - prefix,
        p.sonnet_output_len.unwrap_or(150)
    ))
}

/// `random-mm`'s images: `--random-mm-base-items-per-request` of one size, the one image
/// bucket of `--random-mm-bucket-config` (default 256x256, the first of vLLM's default).
fn random_mm(p: &PeerArgs) -> anyhow::Result<String> {
    let n = p.random_mm_base_items_per_request.unwrap_or(1);
    let (h, w) = match &p.random_mm_bucket_config {
        None => (256, 256),
        Some(c) => one_bucket(c).map_err(|why| {
            usage(format!(
                "--random-mm-bucket-config {c:?}: {why} (bench sends images of one size: give one \
                 image bucket, e.g. '{{(256, 256, 1): 1.0}}')"
            ))
        })?,
    };
    Ok(format!("images={n},image_width={w},image_height={h}"))
}

/// The `(height, width)` of a bucket config `{(H, W, F): P, ...}` holding one image bucket
/// (`F` = 1; buckets of probability 0 are left out); why not otherwise.
fn one_bucket(config: &str) -> Result<(u32, u32), String> {
    let mut buckets = Vec::new();
    let mut rest = config.trim();
    while let Some(open) = rest.find('(') {
        let close = rest[open..].find(')').ok_or("a tuple is not closed")? + open;
        let nums: Vec<u32> = rest[open + 1..close]
            .split(',')
            .map(|v| v.trim().parse::<u32>())
            .collect::<Result<_, _>>()
            .map_err(|_| "a bucket is not (HEIGHT, WIDTH, FRAMES) in whole numbers")?;
        let after = rest[close + 1..].trim_start();
        let after = after
            .strip_prefix(':')
            .ok_or("a bucket has no `: PROBABILITY`")?;
        let end = after.find([',', '}']).unwrap_or(after.len());
        let prob: f64 = after[..end]
            .trim()
            .parse()
            .map_err(|_| "a probability is not a number")?;
        match nums.as_slice() {
            [_, _, f] if *f != 1 => return Err("bench sends no video (frames > 1)".into()),
            [h, w, _] if prob > 0.0 => buckets.push((*h, *w)),
            [_, _, _] => {}
            _ => return Err("a bucket is not (HEIGHT, WIDTH, FRAMES)".into()),
        }
        rest = &after[end..];
    }
    match buckets.as_slice() {
        [one] => Ok(*one),
        [] => Err("no image bucket".into()),
        _ => Err(format!("{} image buckets", buckets.len())),
    }
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
    let groups = [
        (
            "sonnet",
            "--sonnet-*",
            p.sonnet_input_len.is_some()
                || p.sonnet_output_len.is_some()
                || p.sonnet_prefix_len.is_some(),
        ),
        (
            "prefix_repetition",
            "--prefix-repetition-*",
            p.prefix_repetition_prefix_len.is_some()
                || p.prefix_repetition_suffix_len.is_some()
                || p.prefix_repetition_num_prefixes.is_some()
                || p.prefix_repetition_output_len.is_some(),
        ),
        (
            "random-mm",
            "--random-mm-*",
            p.random_mm_base_items_per_request.is_some() || p.random_mm_bucket_config.is_some(),
        ),
    ];
    for (owner, flags, given) in groups {
        if given && name != owner {
            return Err(usage(format!(
                "{flags} flags apply to --dataset-name {owner}, not {name}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_config_gives_its_one_image_size() {
        assert_eq!(one_bucket("{(720, 1280, 1): 1.0}"), Ok((720, 1280)));
        assert_eq!(
            one_bucket("{(256, 256, 1): 0.0, (512, 384, 1): 1}"),
            Ok((512, 384))
        );
        for (bad, says) in [
            (
                "{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}",
                "2 image buckets",
            ),
            ("{(256, 256, 8): 1.0}", "video"),
            ("{(256, 256): 1.0}", "(HEIGHT, WIDTH, FRAMES)"),
            ("{}", "no image bucket"),
            ("{(a, 2, 1): 1}", "whole numbers"),
        ] {
            let e = one_bucket(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
