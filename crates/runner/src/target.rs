//! Reaching the server: a worker per target built from the target and request settings,
//! checked, connected to its target (or the simulator `--mock` starts) and told the model the
//! first one serves; several targets share the load as one [`Fleet`].

use std::sync::Arc;

use anyhow::Context as _;
use bench_core::ModelMix;
use bench_mock::MockServer;
use bench_tokenizer::Tokenizer;
use bench_worker::{Fleet, Worker, WorkerConfig};

use crate::settings::{Settings, VllmExtensions};
use crate::{limits, UsageError};

/// The worker's configuration: every setting of the target and request groups, the model
/// `model` when given (a later target's: the first one's).
fn worker_config(
    s: &Settings,
    target: &str,
    (model, mix): (Option<&str>, Option<&Arc<ModelMix>>),
    vllm_extensions: bool,
) -> WorkerConfig {
    let (t, r) = (&s.target, &s.request);
    WorkerConfig {
        target: target.to_string(),
        backend: t.backend,
        endpoint: t.endpoint.clone(),
        model: model.map(str::to_string).or_else(|| t.model.clone()),
        models: mix.cloned(),
        api_key: t.api_key.clone(),
        headers: t.headers.clone(),
        session_header: t.session_header.clone(),
        replica_header: t.replica_header.clone(),
        http2: t.http2,
        insecure: t.insecure,
        cacert: t.cacert.clone(),
        timeouts: t.timeouts,
        extra_body: r.body_extra(t.backend == bench_worker::BackendKind::Tgi),
        vllm_extensions,
        ignore_eos: r.ignore_eos,
        // A run that lets the server stop at EOS does not force a minimum either.
        min_tokens: r.ignore_eos,
        include_usage: true,
        silence_notice: bench_core::SILENCE_NOTICE,
        stream: r.stream,
        think_tags: r.think_tags,
        source_addresses: if t.source_addresses.is_empty() {
            limits::loopback_sources(
                target,
                limits::planned_concurrency(&s.load.profile),
                limits::ports_per_source(),
            )
        } else {
            t.source_addresses.clone()
        },
    }
}

/// Builds the worker (sending `model` when given), checks the target, and settles
/// `--vllm-extensions auto` from what the server says it is.
async fn connect(
    s: &Settings,
    target: &str,
    model: (Option<&str>, Option<&Arc<ModelMix>>),
) -> anyhow::Result<Worker> {
    let on = s.request.vllm_extensions != VllmExtensions::Off;
    let shown = bench_worker::redact_url(target);
    let worker = Worker::new(worker_config(s, target, model, on))
        .await
        .map_err(|e| UsageError::new(format!("--target: {e}")))?;
    worker.health_check().await.map_err(|e| match e {
        bench_worker::Error::Unreachable { .. } => {
            anyhow::Error::new(e).context(format!("the target {shown} is not answering"))
        }
        other => anyhow::Error::new(other),
    })?;
    if s.request.vllm_extensions != VllmExtensions::Auto
        || s.target.backend == bench_worker::BackendKind::Tgi
        || s.target.backend.pooling()
    {
        return Ok(worker);
    }
    let owner = worker.model_owner().await;
    if bench_worker::vllm_extensions_wanted(owner.as_deref()) {
        return Ok(worker);
    }
    tracing::warn!(
        "the server does not identify as vLLM, SGLang or llama.cpp (owned_by: {}): not sending \
         ignore_eos / min_tokens, so outputs may stop before their asked length; \
         --vllm-extensions on sends them",
        owner.as_deref().unwrap_or("none")
    );
    Worker::new(worker_config(s, target, model, false))
        .await
        .map_err(|e| UsageError::new(format!("--target: {e}")).into())
}

/// The servers a run talks to: the first one's URL, the workers connected to them and the
/// model the first serves, and the in-process simulator when it is the one.
pub(crate) struct Server {
    pub mock: Option<MockServer>,
    pub target: String,
    pub fleet: Fleet,
    pub model: String,
}

/// Starts the simulator (with `--mock`), connects to every target, finds the first one's model
/// and sends it to all; the workers count output tokens with `tokenizer`.
pub(crate) async fn reach_server(
    s: &Settings,
    tokenizer: &Tokenizer,
    shard: Option<bench_core::Shard>,
) -> anyhow::Result<Server> {
    let mock = crate::services::start_mock(s, tokenizer).await?;
    let targets = match &mock {
        Some(m) => vec![m.url()],
        None => s.target.targets.clone(),
    };
    let Some((target, others)) = targets.split_first() else {
        return Err(UsageError::new("no target").into());
    };
    // A model mix: each request's model by its index in the whole schedule (the shard's too).
    let mix = s
        .target
        .model_mix
        .as_ref()
        .map(|m| Arc::new(m.mix(s.load.build.seed, shard)));
    let first = connect(s, target, (None, mix.as_ref())).await?;
    let model = first.discover_model().await.with_context(|| {
        format!(
            "finding the model served at {}",
            bench_worker::redact_url(target)
        )
    })?;
    let counter_tk = tokenizer.clone();
    let counter: bench_worker::OutputCounter = Arc::new(move |t: &str| counter_tk.count(t));
    let mut rest = Vec::with_capacity(others.len());
    for url in others {
        let worker = connect(s, url, (Some(&model), mix.as_ref())).await?;
        rest.push(worker.with_output_counter(counter.clone()));
    }
    let first = first.with_output_counter(counter);
    let balance = s.target.balance.unwrap_or_default();
    Ok(Server {
        mock,
        target: target.clone(),
        fleet: Fleet::new(first, rest, balance),
        model,
    })
}
