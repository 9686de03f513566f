//! The request-body group: extra body, sampling shortcuts, vLLM-only fields.

use super::{usage, RequestSettings, Sampling, Sources, VllmExtensions};

pub(crate) fn resolve(src: &Sources<'_>) -> anyhow::Result<RequestSettings> {
    let (c, f) = (&src.cli.request, src.file);
    let extra_body = match (&c.extra_body, &f.extra_body) {
        (Some(text), _) => Some(
            serde_json::from_str::<serde_json::Value>(text)
                .map_err(|e| usage(format!("--extra-body: not JSON: {e}")))?,
        ),
        (None, Some(v)) => Some(v.clone()),
        (None, None) => None,
    };
    if let Some(v) = &extra_body {
        if !v.is_object() {
            return Err(usage(format!(
                "{}: expected a JSON object, got {v}",
                src.origin("extra-body", c.extra_body.is_some())
            )));
        }
    }
    let vllm_extensions = match c.vllm_extensions.as_ref().or(f.vllm_extensions.as_ref()) {
        Some(s) => VllmExtensions::parse(s).map_err(|e| {
            usage(format!(
                "{}: {e}",
                src.origin("vllm-extensions", c.vllm_extensions.is_some())
            ))
        })?,
        None => VllmExtensions::Auto,
    };
    let sampling = Sampling {
        temperature: c.temperature.or(f.temperature),
        top_p: c.top_p.or(f.top_p),
        top_k: c.top_k.or(f.top_k),
        min_p: c.min_p.or(f.min_p),
        frequency_penalty: c.frequency_penalty.or(f.frequency_penalty),
        presence_penalty: c.presence_penalty.or(f.presence_penalty),
        repetition_penalty: c.repetition_penalty.or(f.repetition_penalty),
    };
    for (k, v) in sampling.to_json() {
        if v.as_f64().is_none_or(|x| !x.is_finite()) {
            return Err(usage(format!(
                "--{}: not a finite number",
                k.replace('_', "-")
            )));
        }
    }
    Ok(RequestSettings {
        extra_body,
        sampling,
        ignore_eos: c.ignore_eos.or(f.ignore_eos).unwrap_or(true),
        vllm_extensions,
        stream: !c.no_stream && f.stream.unwrap_or(true),
        think_tags: c.think_tags || f.think_tags.unwrap_or(false),
    })
}
