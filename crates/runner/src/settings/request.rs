//! What goes into every request body besides the prompt: extra body, sampling shortcuts,
//! vLLM-only fields.

use serde::{Deserialize, Serialize};

/// When to send vLLM's body extensions (`ignore_eos`, `min_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VllmExtensions {
    /// When the server identifies as vLLM, SGLang, llama.cpp or bench's simulator (its
    /// `/v1/models` entries' `owned_by`).
    #[default]
    Auto,
    /// Always (OpenAI backends).
    On,
    /// Never: strict OpenAI-compatible APIs refuse unknown fields.
    Off,
}

impl VllmExtensions {
    /// Parses the name in flags and profiles (`auto`, `on` or `true`, `off` or `false`).
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(Self::Auto),
            "on" | "true" => Ok(Self::On),
            "off" | "false" => Ok(Self::Off),
            o => Err(format!("expected auto, on or off, got `{o}`")),
        }
    }

    /// The name in flags and profiles.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::On => "on",
            Self::Off => "off",
        }
    }
}

/// The sampling shortcuts (each sent only when given).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Sampling {
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Sampling temperature (`temperature`).
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Nucleus sampling (`top_p`).
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Top-k sampling (`top_k`).
    pub top_k: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Minimum-probability sampling (`min_p`).
    pub min_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// `frequency_penalty`.
    pub frequency_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// `presence_penalty`.
    pub presence_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// `repetition_penalty`.
    pub repetition_penalty: Option<f64>,
}

impl Sampling {
    /// The given parameters as a JSON object (empty when none is given).
    pub fn to_json(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    }
}

/// What goes into every body besides the prompt and lengths.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestSettings {
    /// `--extra-body`, as given (a JSON object).
    pub extra_body: Option<serde_json::Value>,
    /// Sampling shortcuts.
    pub sampling: Sampling,
    /// Send `ignore_eos` (with the extensions on).
    pub ignore_eos: bool,
    /// When to send vLLM's extensions.
    pub vllm_extensions: VllmExtensions,
    /// Ask for streamed replies (off with `--no-stream`).
    pub stream: bool,
    /// Read `<think>` tags in answer text as reasoning.
    pub think_tags: bool,
}

impl RequestSettings {
    /// The object merged into every body: the sampling parameters, then `--extra-body` over
    /// them (vLLM's order). TGI takes sampling parameters under `parameters`.
    pub fn body_extra(&self, tgi: bool) -> Option<serde_json::Value> {
        let sampling = self.sampling.to_json();
        let mut out = serde_json::Map::new();
        if !sampling.is_empty() {
            if tgi {
                out.insert("parameters".into(), serde_json::Value::Object(sampling));
            } else {
                out = sampling;
            }
        }
        if let Some(serde_json::Value::Object(extra)) = &self.extra_body {
            for (k, v) in extra {
                match (out.get_mut(k), v) {
                    (Some(serde_json::Value::Object(a)), serde_json::Value::Object(b)) => {
                        for (kk, vv) in b {
                            a.insert(kk.clone(), vv.clone());
                        }
                    }
                    _ => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (!out.is_empty()).then_some(serde_json::Value::Object(out))
    }
}
