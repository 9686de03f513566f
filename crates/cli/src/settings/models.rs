//! The model(s) requests name (docs/cli.md, "Model mixes"): `--model NAME` or a list
//! `--model a,b` / `--model base:0.5,lora-a:0.3` with `--model-selection` (AIPerf:
//! `--model-names`, `--model-selection-strategy`), vLLM's `--lora-modules` with
//! `--lora-assignment`, and inference-perf's `lora_traffic_split` profile key.

use bench_core::{parse_model_list, ModelMix, ModelSelection, ModelWeight};

use super::{usage, MixSettings, Sources};

/// What the model settings resolve to: the model reported (and sent, without a mix), and the
/// mix when requests choose among several.
pub(crate) type Resolved = (Option<String>, Option<MixSettings>);

/// `--model` (or the profile's `model:`) as one comma-separated text, with where it came from.
fn model_text(src: &Sources<'_>) -> Option<(String, String)> {
    let (c, f) = (&src.cli.target, src.file);
    match (&c.model, &f.model) {
        (Some(m), _) => Some((m.clone(), src.origin("model", true))),
        (None, Some(l)) => Some((l.given().join(","), src.origin("model", false))),
        (None, None) => None,
    }
}

/// `--model-selection` / `--lora-assignment` (flag, else profile), parsed, with its origin.
fn selection(src: &Sources<'_>) -> anyhow::Result<Option<(ModelSelection, String)>> {
    let (c, f, p) = (&src.cli.target, src.file, &src.cli.peers);
    let ours = c
        .model_selection
        .clone()
        .map(|s| (s, true))
        .or_else(|| f.model_selection.clone().map(|s| (s, false)));
    let vllm = p
        .lora_assignment
        .clone()
        .map(|s| (s, true))
        .or_else(|| f.lora_assignment.clone().map(|s| (s, false)));
    let (text, origin, vllm) = match (ours, vllm) {
        (Some(_), Some(_)) => return Err(usage(
            "--model-selection and --lora-assignment are two spellings of one setting; give one",
        )),
        (Some((t, cli)), None) => (t, src.origin("model-selection", cli), false),
        (None, Some((t, cli))) => (t, src.origin("lora-assignment", cli), true),
        (None, None) => return Ok(None),
    };
    let sel = text
        .parse::<ModelSelection>()
        .map_err(|e| usage(format!("{origin}: {e}")))?;
    if vllm && sel == ModelSelection::Weighted {
        return Err(usage(format!(
            "{origin}: expected random or round-robin (vLLM's choices), got `{text}`"
        )));
    }
    Ok(Some((sel, origin)))
}

/// Resolves the model settings: the single model (or the base a LoRA list is served on), and
/// the mix. Conflicting spellings, bad weights and repeated names are usage errors naming the
/// flag or key.
pub(crate) fn resolve(src: &Sources<'_>) -> anyhow::Result<Resolved> {
    let given = model_text(src);
    let list = match &given {
        Some((text, origin)) => {
            parse_model_list(text).map_err(|e| usage(format!("{origin}: {e}")))?
        }
        None => Vec::new(),
    };
    let origin = given.as_ref().map(|g| g.1.clone());
    let Listed {
        models,
        base,
        origin,
        default,
    } = adapters(src, &list, origin)?;
    let sel = selection(src)?;
    let (Some(origin), false) = (origin, models.is_empty()) else {
        return Ok((None, None));
    };
    let chosen = sel.as_ref().map(|s| s.0);
    let selection = chosen.or(default);
    let built = ModelMix::new(&models, selection, 0).map_err(|e| {
        let at = sel.as_ref().map_or(origin.as_str(), |s| s.1.as_str());
        usage(format!("{at}: {e}"))
    })?;
    if models.len() == 1 {
        // One model: sent as before, no mix (a lone LoRA adapter replaces the base).
        return Ok((Some(models[0].name.clone()), None));
    }
    let mix = MixSettings {
        models,
        selection: built.selection(),
    };
    Ok((base.or_else(|| Some(mix.models[0].name.clone())), Some(mix)))
}

/// The models of the mix and the base model reported beside them: vLLM's `--lora-modules` or
/// inference-perf's `lora_traffic_split` (with `--model` the base), else the `--model` list;
/// with where the list came from and its default selection (random for the peers' LoRA lists,
/// as they draw).
fn adapters(
    src: &Sources<'_>,
    list: &[ModelWeight],
    origin: Option<String>,
) -> anyhow::Result<Listed> {
    let (f, p) = (src.file, &src.cli.peers);
    let lora = if p.lora_modules.is_empty() {
        f.lora_modules.clone().map(|l| (l, false))
    } else {
        Some((p.lora_modules.clone(), true))
    };
    let split = f.lora_traffic_split.clone();
    let peer = match (lora, split) {
        (Some(_), Some(_)) => {
            return Err(usage(format!(
                "{}: lora_modules and lora_traffic_split both name the adapters; give one",
                src.origin("lora-modules", false)
            )))
        }
        (Some((names, cli)), None) => {
            let origin = src.origin("lora-modules", cli);
            let text = names.join(",");
            let models = parse_model_list(&text).map_err(|e| usage(format!("{origin}: {e}")))?;
            if models.iter().any(|m| m.weight.is_some()) {
                return Err(usage(format!(
                    "{origin}: vLLM's adapters take no weights; give weights with --model base:0.5,lora-a:0.5"
                )));
            }
            Some((models, origin))
        }
        (None, Some(splits)) => {
            let origin = src.origin("lora-traffic-split", false);
            let models = splits
                .into_iter()
                .map(|s| ModelWeight {
                    name: s.name,
                    weight: Some(s.split),
                })
                .collect::<Vec<_>>();
            if models
                .iter()
                .any(|m| !m.weight.is_some_and(|w| w.is_finite() && w > 0.0))
            {
                return Err(usage(format!(
                    "{origin}: every split must be a positive number"
                )));
            }
            Some((models, origin))
        }
        (None, None) => None,
    };
    let Some((models, peer_origin)) = peer else {
        return Ok(Listed {
            models: list.to_vec(),
            base: None,
            origin,
            default: None,
        });
    };
    if list.len() > 1 || list.iter().any(|m| m.weight.is_some()) {
        return Err(usage(format!(
            "{peer_origin}: give the models either as a --model list or as the adapters, not both (--model then names the base model)"
        )));
    }
    Ok(Listed {
        models,
        base: list.first().map(|m| m.name.clone()),
        origin: Some(peer_origin),
        default: Some(ModelSelection::Random),
    })
}

/// The models of a mix as listed, before the selection is applied.
struct Listed {
    models: Vec<ModelWeight>,
    /// The base model reported beside a peer's adapter list (its `--model`).
    base: Option<String>,
    /// The flag or key the list came from.
    origin: Option<String>,
    /// The selection when none is given (random for the peers' adapter lists).
    default: Option<ModelSelection>,
}

#[cfg(test)]
mod tests {
    use super::super::{resolve as resolve_all, CommonArgs, ToFile as _};
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
    }

    fn run(args: &[&str]) -> anyhow::Result<super::super::Settings> {
        let mut all = vec!["bench", "--target", "http://127.0.0.1:9"];
        all.extend_from_slice(args);
        let cli = Cli::try_parse_from(all).expect("parse");
        resolve_all(&cli.common, Some("synchronous"), &[], false)
    }

    #[test]
    fn lists_weights_and_the_peers_spellings_resolve_to_one_mix() {
        let s = run(&["--model", "base:0.5,lora-a:0.3,lora-b:0.2"]).expect("ok");
        let mix = s.target.model_mix.expect("mix");
        assert_eq!(mix.selection.name(), "weighted");
        assert_eq!(s.target.model.as_deref(), Some("base"));
        let s = run(&[
            "--model-names",
            "a,b",
            "--model-selection-strategy",
            "random",
        ])
        .expect("ok");
        assert_eq!(s.target.model_mix.expect("mix").selection.name(), "random");
        let s = run(&["--model", "b0", "--lora-modules", "x", "y"]).expect("ok");
        let mix = s.target.model_mix.expect("mix");
        assert_eq!(s.target.model.as_deref(), Some("b0"));
        assert_eq!((mix.models.len(), mix.selection.name()), (2, "random"));
        let s = run(&[
            "--lora-modules",
            "x",
            "y",
            "--lora-assignment",
            "round-robin",
        ])
        .expect("ok");
        assert_eq!(
            s.target.model_mix.expect("mix").selection.name(),
            "round-robin"
        );
        let s = run(&["--model", "one"]).expect("ok");
        assert_eq!(
            (s.target.model.as_deref(), s.target.model_mix),
            (Some("one"), None)
        );
        let s = run(&["--lora-modules", "solo"]).expect("ok");
        assert_eq!(
            (s.target.model.as_deref(), s.target.model_mix),
            (Some("solo"), None)
        );
    }

    #[test]
    fn show_config_writes_a_mix_that_loads_again_to_the_same_settings() {
        let dir = std::env::temp_dir().join(format!("bench-mix-show-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        for (i, args) in [
            &["--model", "base:0.5,lora-a:0.3,lora-b:0.2"][..],
            &["--model", "a,b", "--model-selection", "random"],
            &["--model", "b0", "--lora-modules", "x", "y"],
            &["--model", "one"],
        ]
        .into_iter()
        .enumerate()
        {
            let s = run(args).expect("ok");
            assert!(s.target.model.is_some(), "{args:?}");
            let file = dir.join(format!("p{i}.yaml"));
            let yaml = serde_yaml::to_string(&s.to_file()).expect("yaml");
            std::fs::write(&file, yaml).expect("write");
            let again = run(&["--profile", file.to_str().expect("utf8")]).expect("loads");
            assert_eq!(
                (&again.target.model, &again.target.model_mix),
                (&s.target.model, &s.target.model_mix),
                "{args:?}"
            );
        }
        // inference-perf's split beside a base model keeps the base.
        let split = dir.join("split.yaml");
        std::fs::write(
            &split,
            "model: b0\nlora_traffic_split: [{name: x, split: 0.7}, {name: y, split: 0.3}]\n",
        )
        .expect("write");
        let s = run(&["--profile", split.to_str().expect("utf8")]).expect("ok");
        assert_eq!(s.target.model.as_deref(), Some("b0"));
        let file = dir.join("split-again.yaml");
        let yaml = serde_yaml::to_string(&s.to_file()).expect("yaml");
        assert!(yaml.contains("lora_traffic_split"), "{yaml}");
        std::fs::write(&file, yaml).expect("write");
        let again = run(&["--profile", file.to_str().expect("utf8")]).expect("loads");
        assert_eq!(
            (&again.target.model, &again.target.model_mix),
            (&s.target.model, &s.target.model_mix)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_mixes_are_usage_errors_naming_the_flag() {
        for (args, needle) in [
            (
                &["--model", "a:1,b"][..],
                "--model: give every model a weight",
            ),
            (&["--model", "a,a"], "--model: `a` is named twice"),
            (
                &["--model", "a,,b"],
                "--model: model 2 of the list is empty",
            ),
            (&["--model", "a:-1,b:1"], "--model: `a:-1`"),
            (
                &["--model", "a,b", "--model-selection", "sticky"],
                "--model-selection: unknown model selection",
            ),
            (
                &["--model", "a:1,b:2", "--model-selection", "round-robin"],
                "--model-selection: round-robin takes no weights",
            ),
            (
                &["--model", "a,b", "--lora-modules", "x"],
                "--lora-modules: give the models either",
            ),
            (
                &["--lora-modules", "x", "y", "--lora-assignment", "weighted"],
                "--lora-assignment: expected random or round-robin",
            ),
            (
                &[
                    "--model",
                    "a,b",
                    "--model-selection",
                    "random",
                    "--lora-assignment",
                    "random",
                ],
                "two spellings of one setting",
            ),
        ] {
            let e = run(args).expect_err("refused").to_string();
            assert!(e.contains(needle), "{args:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
