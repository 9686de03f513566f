//! The engine serving several models, on the paused clock (docs/simulator.md, "Models and
//! LoRA adapters"): per-model step costs, adapter loads, and `max_loras`.

use super::*;
use crate::config::ServedModel;

/// Base `base` (1 ms per sequence, the server's), adapters `a` and `b` (3 ms per sequence),
/// `max_loras` resident, 4 ms loads; steps of 10 ms plus the sequences' costs, 2 ms prefills.
fn served(max_loras: u32) -> Arc<ServedModels> {
    let m = |name: &str, lora: bool, cost: Option<f64>| ServedModel {
        name: name.into(),
        lora,
        step_per_seq_ms: cost,
    };
    let cfg = crate::MockConfig {
        step_per_seq_ms: 1.0,
        models: vec![
            m("base", false, None),
            m("a", true, Some(3.0)),
            m("b", true, Some(3.0)),
        ],
        max_loras,
        lora_swap_ms: 4.0,
        ..crate::MockConfig::default()
    };
    Arc::new(ServedModels::from_config(&cfg).expect("models"))
}

fn engine(max_loras: u32) -> EngineHandle {
    let params = EngineParams {
        max_batch: 4,
        step_base_ns: 10e6,
        step_per_seq_ns: 1e6,
        prefill_overhead_ns: 2e6,
        prefill_ns_per_token: 0.0,
        cache_blocks: 0,
        block_size: 16,
        step_budget: 0,
        spec_tokens: 0,
    };
    let metrics = Arc::new(Metrics::new("base", 1000, 1));
    spawn_serving(params, Some(served(max_loras)), metrics, 0).0
}

/// Submits a sequence of `model` now; the offsets in ms from `t0` of its tokens.
fn track(
    e: &EngineHandle,
    t0: Instant,
    model: u16,
    tokens: u32,
) -> tokio::task::JoinHandle<Vec<f64>> {
    let h = e.submit_as(model, 0, tokens, Blocks::default());
    tokio::spawn(async move {
        let mut at = Vec::new();
        for k in 1..=tokens {
            h.wait_for(k).await;
            at.push((Instant::now() - t0).as_secs_f64() * 1e3);
        }
        at
    })
}

#[tokio::test(start_paused = true)]
async fn each_model_costs_its_own_step_share_and_a_load_delays_its_first_token() {
    let e = engine(2);
    let t0 = Instant::now();
    let base = track(&e, t0, 0, 3);
    let a = track(&e, t0, 1, 3);
    // Both admitted at 0: base's prefill 2 ms, a's 2 ms + its 4 ms load. Steps of
    // 10 + 1 (base) + 3 (a) = 14 ms: the first ends at 14 (no one decoding yet), then tokens
    // at 28 and 42.
    assert_eq!(base.await.expect("base"), [2.0, 28.0, 42.0]);
    assert_eq!(a.await.expect("a"), [6.0, 28.0, 42.0]);
    // a is resident now: no load the second time.
    let t1 = Instant::now();
    let again = track(&e, t1, 1, 1);
    assert_eq!(again.await.expect("a again"), [2.0]);
}

#[tokio::test(start_paused = true)]
async fn an_adapter_that_cannot_be_loaded_waits_while_later_requests_run() {
    let e = engine(1);
    let t0 = Instant::now();
    let a = track(&e, t0, 1, 3);
    let b = track(&e, t0, 2, 1);
    let base = track(&e, t0, 0, 1);
    // One adapter resident at once: b waits while a holds its slot; base, behind it in the
    // queue, is admitted at once. Steps: 10 + 3 + 1 = 14 ms, then a alone 13 ms.
    assert_eq!(base.await.expect("base"), [2.0]);
    assert_eq!(a.await.expect("a"), [6.0, 27.0, 40.0]);
    // a left at 40: b evicts it, loads (4 ms) and prefills (2 ms).
    assert_eq!(b.await.expect("b"), [46.0]);
}
