//! vLLM's and guidellm's flags whose meaning differs from a bench flag, translated into
//! bench's own before anything is resolved (docs/cli.md has the table). Flags that mean the
//! same are plain clap aliases in `args.rs`.

use std::path::{Path, PathBuf};

use bench_profile::RateType;

use super::args::CommonArgs;
use super::usage;

/// vLLM's default `--num-prompts` (a `--request-rate` run is bounded by it).
pub const VLLM_NUM_PROMPTS: u64 = 1000;

/// The command line with every peer flag turned into bench's: the effective flags, rate type
/// and rates, and the profile file to read.
#[derive(Debug)]
pub struct Translated {
    pub cli: CommonArgs,
    pub rate_type: Option<String>,
    pub rate: Vec<String>,
    pub profile_file: Option<PathBuf>,
}

/// Applies the translations; conflicting spellings of one setting are usage errors.
pub fn translate(
    cli: &CommonArgs,
    rate_type: Option<&str>,
    rate: &[String],
) -> anyhow::Result<Translated> {
    let mut out = Translated {
        cli: cli.clone(),
        rate_type: rate_type.map(str::to_owned),
        rate: rate.to_vec(),
        profile_file: cli.scenario.clone(),
    };
    profile_or_kind(&mut out)?;
    host_port(&mut out)?;
    vllm_default_count(&mut out);
    transients(&mut out)?;
    request_rate(&mut out)?;
    dataset(&mut out)?;
    let p = &out.cli.peers;
    if p.disable_console_outputs {
        out.cli.report.console = Some(super::ConsoleArg::None);
    }
    if let Some(rt) = p.request_type.clone() {
        let backend = match rt.as_str() {
            "text_completions" => "openai-completions",
            "chat_completions" => "openai-chat",
            other => {
                return Err(usage(format!(
                    "--request-type: expected text_completions or chat_completions, got `{other}`"
                )))
            }
        };
        if out.cli.target.backend.is_some() {
            return Err(usage("give --backend or --request-type, not both"));
        }
        out.cli.target.backend = Some(backend.into());
    }
    Ok(out)
}

/// guidellm 0.4+ `--profile KIND` against bench's `--profile FILE.yaml`: an existing file (or
/// a name ending in .yaml / .yml) is a profile file; otherwise a rate type names the load.
fn profile_or_kind(out: &mut Translated) -> anyhow::Result<()> {
    let Some(p) = out.cli.profile.clone() else {
        return Ok(());
    };
    let path = Path::new(&p);
    let looks_like_file = path.exists() || p.ends_with(".yaml") || p.ends_with(".yml");
    if looks_like_file {
        out.profile_file = Some(path.to_path_buf());
        return Ok(());
    }
    match p.parse::<RateType>() {
        Ok(_) => {
            if out.rate_type.is_some() {
                return Err(usage(format!(
                    "--profile {p} (guidellm's load kind) and --rate-type both name the load"
                )));
            }
            out.rate_type = Some(p);
            Ok(())
        }
        Err(e) => Err(usage(format!(
            "--profile {p}: no such file, and not a load kind ({e})"
        ))),
    }
}

fn host_port(out: &mut Translated) -> anyhow::Result<()> {
    let p = &out.cli.peers;
    if p.host.is_none() && p.port.is_none() {
        return Ok(());
    }
    if !out.cli.target.target.is_empty() {
        return Err(usage(
            "give --target (--base-url) or --host/--port, not both",
        ));
    }
    let host = p.host.clone().unwrap_or_else(|| "127.0.0.1".into());
    let host = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host
    };
    out.cli.target.target = vec![format!("http://{host}:{}", p.port.unwrap_or(8000))];
    Ok(())
}

/// vLLM's `--request-rate R`: a Poisson (gamma) load at R req/s bounded by `--num-prompts`
/// (default 1000); `inf` sends them all at once (a burst).
fn request_rate(out: &mut Translated) -> anyhow::Result<()> {
    let Some(r) = out.cli.peers.request_rate.clone() else {
        return Ok(());
    };
    if out.rate_type.is_some() || !out.rate.is_empty() {
        return Err(usage(
            "--request-rate stands for --rate-type poisson --rate R; give one or the other",
        ));
    }
    let load = &out.cli.load;
    let r = r.trim();
    if r.eq_ignore_ascii_case("inf") {
        let n = load
            .num_prompts
            .or(load.max_requests)
            .unwrap_or(VLLM_NUM_PROMPTS);
        out.rate_type = Some("burst".into());
        out.rate = vec![n.to_string()];
        return Ok(());
    }
    let v: f64 = r
        .parse()
        .map_err(|_| usage(format!("--request-rate: `{r}` is not a number or inf")))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(usage(format!("--request-rate: `{r}` must be positive")));
    }
    out.rate_type = Some("poisson".into());
    out.rate = vec![r.to_string()];
    Ok(())
}

/// A `--request-rate` run without a bound sends vLLM's default `--num-prompts`.
fn vllm_default_count(out: &mut Translated) {
    let load = &mut out.cli.load;
    let bounded = load.num_prompts.is_some() || load.max_requests.is_some();
    if out.cli.peers.request_rate.is_some() && !bounded && load.max_seconds.is_none() {
        load.num_prompts = Some(VLLM_NUM_PROMPTS);
    }
}

/// vLLM's `--dataset-name` / `--dataset-path` and the per-dataset length flags, as a `--data`
/// argument.
fn dataset(out: &mut Translated) -> anyhow::Result<()> {
    let p = &out.cli.peers;
    let random_flags = p.random_input_len.is_some()
        || p.random_output_len.is_some()
        || p.random_range_ratio.is_some()
        || p.random_prefix_len.is_some();
    let name = match (&p.dataset_name, &p.dataset_path) {
        (Some(n), _) => n.as_str(),
        (None, Some(_)) => "custom",
        (None, None) if random_flags => "random",
        (None, None) => return super::vllm_data::check_flags(p, "no --dataset-name"),
    };
    let data = super::vllm_data::data_arg(p, name)?;
    if !matches!(name, "random" | "random-mm") && random_flags {
        return Err(usage(format!(
            "--random-* flags apply to --dataset-name random, not {name}"
        )));
    }
    super::vllm_data::check_flags(p, name)?;
    if out.cli.data.data.is_some() {
        return Err(usage(
            "give --data or --dataset-name/--dataset-path, not both",
        ));
    }
    out.cli.data.data = Some(data);
    Ok(())
}

fn transients(out: &mut Translated) -> anyhow::Result<()> {
    let p = out.cli.peers.clone();
    let load = &mut out.cli.load;
    for (flag, v, slot) in [
        ("--warmup-percent", p.warmup_percent, &mut load.warmup),
        ("--cooldown-percent", p.cooldown_percent, &mut load.cooldown),
    ] {
        if let Some(f) = v {
            if slot.is_some() {
                return Err(usage(format!("give {flag} or its bench flag, not both")));
            }
            // guidellm takes a fraction (0.1) here; 10 means 10 %.
            let f = if f >= 1.0 { f / 100.0 } else { f };
            *slot = Some(f.to_string());
        }
    }
    if let Some(n) = p.num_warmups.filter(|n| *n > 0) {
        if load.warmup.is_some() {
            return Err(usage("give --num-warmups or --warmup, not both"));
        }
        load.warmup = Some(format!("{n}req"));
        // vLLM's warmups come on top of --num-prompts.
        if let Some(total) = load.num_prompts.as_mut() {
            *total += n;
        } else if let Some(total) = load.max_requests.as_mut() {
            *total += n;
        }
    }
    Ok(())
}
