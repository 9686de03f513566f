//! The resolved settings written back as a profile (`--show-config`): every key is one that
//! [`super::load_file`] reads, so the output loads again and resolves to the same settings.
//! Secrets stay out: the API key and header values are never written (give them again with
//! `--api-key` / `--header`).

use bench_profile::{RateType, SweepMode};

use super::file::{DataValue, FileSettings, PrecisionValue, RateList, TargetList};
use super::Settings;

/// The settings as a profile file (the runner's [`Settings`] know nothing of profiles).
pub trait ToFile {
    /// These settings as a profile file.
    fn to_file(&self) -> FileSettings;
}

/// The settings as the YAML profile `--show-config` prints.
pub fn text(settings: &Settings) -> String {
    match serde_yaml::to_string(&settings.to_file()) {
        Ok(s) => s,
        Err(_) => format!("{settings:?}"),
    }
}

impl ToFile for Settings {
    fn to_file(&self) -> FileSettings {
        let (t, r, d, l, o) = (
            &self.target,
            &self.request,
            &self.data,
            &self.load,
            &self.report,
        );
        let dt = bench_worker::Timeouts::default();
        let secs =
            |v: std::time::Duration, d: std::time::Duration| (v != d).then_some(v.as_secs_f64());
        let s = &r.sampling;
        let by_request = l
            .ramp
            .filter(|r| r.over == bench_core::RampOver::Requests)
            .and_then(|_| l.rate.first().copied());
        FileSettings {
            target: match t.targets.as_slice() {
                [] => None,
                [one] => Some(TargetList::One(one.clone())),
                many => Some(TargetList::Many(many.to_vec())),
            },
            balance: t.balance.map(|b| b.name().to_string()),
            mock: t.mock.then_some(true),
            mock_config: t.mock_config.clone(),
            backend: Some(t.backend.name().to_string()),
            endpoint: t.endpoint.clone(),
            model: model_key(t),
            model_selection: t
                .model_mix
                .as_ref()
                .filter(|_| !lora_form(t))
                .map(|m| m.selection.name().to_string()),
            lora_modules: t
                .model_mix
                .as_ref()
                .filter(|_| lora_form(t))
                .map(|m| m.models.iter().map(|x| x.name.clone()).collect()),
            lora_assignment: t
                .model_mix
                .as_ref()
                .filter(|_| lora_form(t))
                .map(|m| m.selection.name().to_string()),
            lora_traffic_split: t.model_mix.as_ref().filter(|_| split_form(t)).map(|m| {
                m.models
                    .iter()
                    .map(|x| super::file::LoraSplit {
                        name: x.name.clone(),
                        split: x.weight.unwrap_or(1.0),
                    })
                    .collect()
            }),
            header: None,
            session_header: t.session_header.clone(),
            replica_header: t.replica_header.clone(),
            http2: t.http2.then_some(true),
            insecure: t.insecure.then_some(true),
            cacert: t.cacert.clone(),
            request_timeout: secs(t.timeouts.total, dt.total),
            first_byte_timeout: secs(t.timeouts.first_byte, dt.first_byte),
            idle_timeout: secs(t.timeouts.idle, dt.idle),
            connect_timeout: secs(t.timeouts.connect, dt.connect),
            source_address: (!t.source_addresses.is_empty())
                .then(|| t.source_addresses.iter().map(|a| a.to_string()).collect()),
            extra_body: r.extra_body.clone(),
            ignore_eos: Some(r.ignore_eos),
            vllm_extensions: Some(r.vllm_extensions.name().to_string()),
            stream: (!r.stream).then_some(false),
            think_tags: r.think_tags.then_some(true),
            temperature: s.temperature,
            top_p: s.top_p,
            top_k: s.top_k,
            min_p: s.min_p,
            frequency_penalty: s.frequency_penalty,
            presence_penalty: s.presence_penalty,
            repetition_penalty: s.repetition_penalty,
            data: Some(DataValue::Text(d.data.clone())),
            data_column: d.data_column.clone(),
            processor: d.processor.clone(),
            rate_type: Some(l.rate_type.name().to_string()),
            // vLLM's ramp by request gives its rate as the ramp's end rate.
            rate: (!l.rate.is_empty() && by_request.is_none())
                .then(|| RateList::Many(l.rate.clone())),
            speedup: None,
            num_prompts: None,
            max_concurrency: l.build.max_concurrency,
            burstiness: Some(l.build.burstiness),
            seed: Some(l.build.seed),
            sweep_size: (l.rate_type == RateType::Sweep).then_some(l.build.sweep_size),
            sweep_rate_type: l.build.sweep_poisson.then(|| "poisson".to_string()),
            sweep_mode: (l.rate_type == RateType::Sweep
                && l.build.sweep_mode == SweepMode::Guidellm)
                .then(|| "guidellm".to_string()),
            slo: l.build.slo.as_ref().map(|s| s.to_string()),
            slo_tolerance: l.build.slo.as_ref().map(|_| l.build.slo_tolerance),
            slo_precision: l
                .build
                .slo_precision
                .map(|p| PrecisionValue::Text(bench_core::Target(p).to_string())),
            capacity_precision: l
                .build
                .capacity_precision
                .map(|p| PrecisionValue::Text(bench_core::Target(p).to_string())),
            max_seconds: l.limits.max_seconds,
            drain_timeout: l.limits.drain_timeout,
            precision: l
                .limits
                .precision
                .map(|p| PrecisionValue::Text(bench_core::Target(p.target).to_string())),
            precision_budget: l.limits.precision.map(|p| p.budget_s),
            max_requests: l.limits.max_requests,
            max_errors: l.limits.max_errors,
            max_error_rate: l.limits.max_error_rate,
            stop_over_saturated: l.limits.over_saturation.is_some().then_some(true),
            over_saturation: l.limits.over_saturation,
            warmup: user_warmup(l),
            cooldown: l.cooldown,
            rampup: l.ramp.and_then(|r| match r.over {
                bench_core::RampOver::Seconds(d) => {
                    Some(serde_yaml::Value::String(format!("{d}s")))
                }
                bench_core::RampOver::Requests => None,
            }),
            ramp_up_strategy: l.ramp.map(|r| match r.shape {
                bench_core::RampShape::Linear => "linear".to_string(),
                bench_core::RampShape::Exponential => "exponential".to_string(),
            }),
            ramp_up_start_rps: l.ramp.map(|r| r.from_rps).filter(|f| *f > 0.0),
            ramp_up_end_rps: by_request,
            rampup_in_window: l
                .ramp
                .filter(|r| r.in_window && r.duration().is_some())
                .map(|_| true),
            cancel_rate: l.cancellation.map(|c| serde_yaml::Value::from(c.share)),
            request_cancellation_rate: None,
            cancel_after: l.cancellation.map(|c| serde_yaml::Value::from(c.after_s)),
            think_time: (l.think_time != bench_core::ThinkTime::None)
                .then(|| l.think_time.to_string()),
            repeat: (l.repeat.trials > 1).then(|| l.repeat.trials.into()),
            repeat_until: l
                .repeat
                .until
                .map(|u| serde_yaml::Value::String(format!("{}%", u * 100.0))),
            // No file and no default: `output: []` keeps it off when loaded again.
            output: (!o.output.is_empty() || !o.default_output).then(|| o.output.clone()),
            console: Some(o.console),
            vllm_layout: o.vllm_layout.clone(),
            quiet: o.quiet.then_some(true),
            percentile_metrics: o.percentile_metrics.clone(),
            metric_percentiles: o.metric_percentiles.clone(),
            goodput: o.goodput.as_ref().map(|g| g.to_string()),
            save_records: o.save_records.then_some(true),
            server_metrics: (!o.server_metrics).then_some(false),
            server_metrics_url: o
                .server_metrics_url
                .as_deref()
                .map(bench_servermetrics::redact),
            server_metrics_interval: Some(o.server_metrics_interval),
            gpu_metrics: (!o.gpu_metrics.is_empty()).then(|| {
                TargetList::Many(
                    o.gpu_metrics
                        .iter()
                        .map(|u| bench_servermetrics::redact(u))
                        .collect(),
                )
            }),
            allow_empty: o.allow_empty.then_some(true),
            save_result: o.save_result.as_ref().map(|_| true),
            result_dir: o.save_result.as_ref().and_then(|v| v.dir.clone()),
            result_filename: o.save_result.as_ref().and_then(|v| v.filename.clone()),
            metadata: (!o.metadata.is_empty()).then(|| o.metadata.clone()),
            label: o.label.clone(),
            plan: None,
        }
    }
}

/// The warmup the user gave: a ramp-up by time outside the window adds its length to it
/// (`ramp::warmup`), taken off again so the settings load back to the same run.
fn user_warmup(l: &super::LoadSettings) -> Option<bench_profile::Transient> {
    use bench_profile::Transient;
    match (l.ramp, l.warmup) {
        (Some(r), Some(Transient::Seconds(w))) if !r.in_window => match r.over {
            bench_core::RampOver::Seconds(d) => (w - d > 1e-9).then_some(Transient::Seconds(w - d)),
            bench_core::RampOver::Requests => l.warmup,
        },
        _ => l.warmup,
    }
}

/// Whether the mix is written as vLLM's `lora_modules` beside a base `model` (the base is no
/// model of the mix; weights, e.g. from `lora_traffic_split`, need the `model` list).
fn lora_form(t: &super::TargetSettings) -> bool {
    match (&t.model, &t.model_mix) {
        (Some(base), Some(m)) => {
            m.models
                .iter()
                .all(|x| x.weight.is_none() && x.name != *base)
                && m.selection != bench_core::ModelSelection::Weighted
        }
        _ => false,
    }
}

/// Whether the mix is written as inference-perf's `lora_traffic_split` beside a base `model`:
/// weighted adapters, the base none of them (a `model` list would lose the base).
fn split_form(t: &super::TargetSettings) -> bool {
    match (&t.model, &t.model_mix) {
        (Some(base), Some(m)) => m
            .models
            .iter()
            .all(|x| x.weight.is_some() && x.name != *base),
        _ => false,
    }
}

/// `model:`: the one model, the base beside `lora_modules` or `lora_traffic_split`, or the
/// mix as a list.
fn model_key(t: &super::TargetSettings) -> Option<TargetList> {
    match &t.model_mix {
        Some(m) if !lora_form(t) && !split_form(t) => {
            Some(TargetList::One(bench_core::model_list_text(&m.models)))
        }
        _ => t.model.clone().map(TargetList::One),
    }
}
