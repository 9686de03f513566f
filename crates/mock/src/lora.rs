//! Several models behind one engine (docs/simulator.md, "Models and LoRA adapters"): a base
//! model and LoRA adapters as vLLM serves them (`--lora-modules`, `--max-loras`). Each model has
//! its own per-sequence step cost; an adapter must be resident to run, at most `max_loras` are
//! resident at once, and loading one that is not costs `lora_swap_ms` of its request's prefill.
//! A request for an adapter that cannot be loaded (every resident adapter has sequences in the
//! batch) waits while later requests are admitted, as vLLM's scheduler skips it.

use std::collections::HashMap;
use std::time::Duration;

use serde::Deserialize;

/// The served models, resolved for the server and the engines.
#[derive(Debug)]
pub(crate) struct ServedModels {
    names: Vec<String>,
    /// JSON-escaped names, for the responses' `model` field.
    escaped: Vec<String>,
    lora: Vec<bool>,
    per_seq_ns: Vec<f64>,
    by_name: HashMap<String, u16>,
    max_loras: usize,
    swap: Duration,
}

impl ServedModels {
    /// The table of `config.models`; `None` when it names none (one model, any name accepted).
    pub(crate) fn from_config(config: &crate::MockConfig) -> Option<Self> {
        if config.models.is_empty() {
            return None;
        }
        let m = &config.models;
        Some(Self {
            names: m.iter().map(|x| x.name.clone()).collect(),
            escaped: m.iter().map(|x| crate::render::escape(&x.name)).collect(),
            lora: m.iter().map(|x| x.lora).collect(),
            per_seq_ns: m
                .iter()
                .map(|x| x.step_per_seq_ms.unwrap_or(config.step_per_seq_ms) * 1e6)
                .collect(),
            by_name: m
                .iter()
                .enumerate()
                .map(|(i, x)| (x.name.clone(), i as u16))
                .collect(),
            max_loras: config.max_loras.max(1) as usize,
            swap: Duration::from_nanos((config.lora_swap_ms * 1e6).round() as u64),
        })
    }

    /// The model a request body names: its index, the base (0) when it names none; the
    /// message of vLLM's 404 for a name not served.
    pub(crate) fn pick(&self, body: &[u8]) -> Result<u16, String> {
        #[derive(Deserialize)]
        struct Named<'a> {
            #[serde(borrow, default)]
            model: Option<std::borrow::Cow<'a, str>>,
        }
        let Ok(Named { model: Some(name) }) = serde_json::from_slice::<Named<'_>>(body) else {
            // No name (or a body the parser will refuse with its own message).
            return Ok(0);
        };
        self.by_name
            .get(name.as_ref())
            .copied()
            .ok_or_else(|| format!("The model `{name}` does not exist."))
    }

    /// Model `i`'s name.
    pub(crate) fn name(&self, i: u16) -> &str {
        self.names.get(usize::from(i)).map_or("", String::as_str)
    }

    /// Model `i`'s JSON-escaped name.
    pub(crate) fn escaped(&self, i: u16) -> &str {
        self.escaped.get(usize::from(i)).map_or("", String::as_str)
    }

    /// The models as `/v1/models` lists them (vLLM's fields: an adapter's `parent` is the
    /// base).
    pub(crate) fn list(&self, config: &crate::MockConfig, created: u64) -> Vec<serde_json::Value> {
        let base = self.name(0);
        (0..self.names.len())
            .map(|i| {
                let name = &self.names[i];
                serde_json::json!({
                    "id": name,
                    "object": "model",
                    "created": created,
                    "owned_by": if config.strict { "system" } else { "bench-mock" },
                    "root": name,
                    "parent": if self.lora[i] { Some(base) } else { None },
                    "max_model_len": config.max_model_len,
                })
            })
            .collect()
    }

    fn is_lora(&self, m: u16) -> bool {
        self.lora.get(usize::from(m)).copied().unwrap_or(false)
    }

    /// A step that starts with sequences of models `held` holding slots:
    /// `step_base_ms + sum of their models' step_per_seq_ms` (`step_base_ns`: the engine's base
    /// cost, nanoseconds).
    pub(crate) fn step(&self, step_base_ns: f64, held: impl Iterator<Item = u16>) -> Duration {
        let per_seq: f64 = held
            .map(|m| self.per_seq_ns.get(usize::from(m)).copied().unwrap_or(0.0))
            .sum();
        let ns = (step_base_ns + per_seq).round();
        Duration::from_nanos((ns as u64).max(1))
    }
}

/// The adapters resident on one engine, least recently used first.
#[derive(Debug, Default)]
pub(crate) struct Resident(Vec<u16>);

impl Resident {
    /// Whether a request for model `m` can run now, with the batch holding sequences of the
    /// models `held`: the base always; an adapter when resident, when a slot is free, or when
    /// some resident adapter has no sequence in the batch (it is then evicted).
    pub(crate) fn admits(&self, s: &ServedModels, m: u16, held: &[u16]) -> bool {
        !s.is_lora(m)
            || self.0.contains(&m)
            || self.0.len() < s.max_loras
            || self.0.iter().any(|r| !held.contains(r))
    }

    /// Makes model `m` resident for a request admitted now (the caller checked
    /// [`Resident::admits`]); the load time it costs (0 for the base and a resident adapter).
    pub(crate) fn load(&mut self, s: &ServedModels, m: u16, held: &[u16]) -> Duration {
        if !s.is_lora(m) {
            return Duration::ZERO;
        }
        if let Some(i) = self.0.iter().position(|&r| r == m) {
            let r = self.0.remove(i);
            self.0.push(r);
            return Duration::ZERO;
        }
        if self.0.len() >= s.max_loras {
            if let Some(i) = self.0.iter().position(|r| !held.contains(r)) {
                self.0.remove(i);
            }
        }
        self.0.push(m);
        s.swap
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MockConfig, ServedModel};

    fn model(name: &str, lora: bool) -> ServedModel {
        ServedModel {
            name: name.into(),
            lora,
            step_per_seq_ms: None,
        }
    }

    #[test]
    fn requests_pick_a_served_model_or_get_vllms_404_message() {
        let cfg = MockConfig {
            models: vec![model("base", false), model("lora-a", true)],
            ..MockConfig::default()
        };
        cfg.validate().expect("valid");
        assert_eq!(cfg.served_model(), "base");
        let s = ServedModels::from_config(&cfg).expect("models");
        assert_eq!(s.pick(br#"{"model":"lora-a","prompt":"x"}"#), Ok(1));
        assert_eq!(s.pick(br#"{"prompt":"x"}"#), Ok(0));
        assert_eq!(
            s.pick(br#"{"model":"nope"}"#),
            Err("The model `nope` does not exist.".to_string())
        );
        let list = s.list(&cfg, 0);
        assert_eq!(list[1]["parent"], "base");
        assert_eq!(list[0]["parent"], serde_json::Value::Null);
        assert!(ServedModels::from_config(&MockConfig::default()).is_none());
    }

    #[test]
    fn bad_model_settings_are_refused_by_name() {
        let bad = [
            MockConfig {
                models: vec![model("a", true)],
                ..MockConfig::default()
            },
            MockConfig {
                models: vec![model("a", false), model("a", true)],
                ..MockConfig::default()
            },
            MockConfig {
                model: "other".into(),
                models: vec![model("a", false)],
                ..MockConfig::default()
            },
            MockConfig {
                max_loras: 0,
                ..MockConfig::default()
            },
            MockConfig {
                lora_swap_ms: -1.0,
                ..MockConfig::default()
            },
        ];
        for (c, field) in bad
            .iter()
            .zip(["models", "models", "model", "max_loras", "lora_swap_ms"])
        {
            let e = c.validate().expect_err("refused").to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
    }
}
