//! Model and LoRA mixes (docs/cli.md, "Model mixes"; docs/metrics.md, "Models"), end to end
//! against the simulator serving a base model and adapters (docs/simulator.md, "Models and
//! LoRA adapters"): its request log shows every request named the model the client chose, in
//! the mix's shares, a model it does not serve is answered 404 and counted against that model,
//! and a mix of step costs carries the closed form's capacity.

use crate::common;

use common::{f, fresh, mock_report, read_log, serial, write_sim};
use serde_json::Value;

/// A fast engine serving `base` and two adapters, both resident at once.
const SMALL: &str = "max_batch: 4\nstep_base_ms: 1\nstep_per_seq_ms: 0.1\nprefill_overhead_ms: 1\nprefill_rate: 0\nmax_loras: 2\nmodels:\n  - name: base\n  - name: lora-a\n    lora: true\n  - name: lora-b\n    lora: true\n";

/// The log's lines in arrival order.
fn by_arrival(mut entries: Vec<Value>) -> Vec<Value> {
    entries.sort_by_key(|e| e["id"].as_u64().expect("id"));
    entries
}

/// The rows of a benchmark's `models`, by name: (requests, completed, errored).
fn rows(b: &Value) -> Vec<(String, f64, f64, f64)> {
    b["models"]
        .as_array()
        .expect("models rows")
        .iter()
        .map(|m| {
            (
                m["name"].as_str().expect("name").to_string(),
                f(m, &["requests"]),
                f(m, &["completed"]),
                f(m, &["errored"]),
            )
        })
        .collect()
}

#[test]
fn each_request_names_the_chosen_model_in_the_weights_exact_shares() {
    let _one = serial();
    let dir = fresh("model-mix", "weighted");
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, SMALL, Some(&log));
    let run = mock_report(
        "run",
        "weighted mix",
        &dir,
        Some(&cfg),
        &[
            "--rate-type",
            "synchronous",
            "--max-requests",
            "50",
            "--data",
            "prompt_tokens=16,output_tokens=4",
            "--model",
            "base:0.5,lora-a:0.3,lora-b:0.2",
            "--save-records",
        ],
    );
    let entries = by_arrival(read_log(&log));
    let _ = std::fs::remove_dir_all(&dir);
    let b = &run["benchmarks"][0];
    let names = ["base", "lora-a", "lora-b"];
    let shares = [0.5, 0.3, 0.2];
    // One request at a time: the k-th the server received is the client's k-th.
    let records = b["records"].as_array().expect("records");
    assert_eq!(entries.len(), 50, "the simulator's log");
    assert_eq!(records.len(), 50);
    let mut count = [0.0f64; 3];
    for (k, (e, r)) in entries.iter().zip(records).enumerate() {
        let model = e["model"].as_str().expect("the log names the model");
        let i = names.iter().position(|n| *n == model).expect("a mix model");
        assert_eq!(r["model"].as_u64(), Some(i as u64), "request {k}: {r}");
        assert_eq!(e["status"], 200, "{e}");
        count[i] += 1.0;
        let n = (k + 1) as f64;
        for (c, s) in count.iter().zip(shares) {
            // Evenly spread: every model within one request of its share, all along.
            assert!((c - n * s).abs() <= 1.0, "after {n}: {count:?}");
        }
    }
    assert_eq!(count, [25.0, 15.0, 10.0]);
    // The report's rows say the same, and add up to the benchmark's counts.
    let got = rows(b);
    for ((name, requests, completed, _), (want, c)) in got.iter().zip(names.iter().zip(count)) {
        assert_eq!((name.as_str(), *requests, *completed), (*want, c, c));
    }
    let ttft = f(&b["models"][1], &["ttft_ms", "median"]);
    assert!(ttft > 0.0, "{}", b["models"][1]);
    let total: f64 = got.iter().map(|r| r.1).sum();
    assert_eq!(total, f(b, &["requests", "total"]));
}

#[test]
fn vllm_spelling_round_robins_and_an_unserved_model_is_a_404_of_its_own_row() {
    let _one = serial();
    let dir = fresh("model-mix", "vllm");
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, SMALL, Some(&log));
    let run = mock_report(
        "run",
        "lora modules",
        &dir,
        Some(&cfg),
        &[
            "--rate-type",
            "synchronous",
            "--max-requests",
            "9",
            "--data",
            "prompt_tokens=16,output_tokens=4",
            "--model",
            "base",
            "--lora-modules",
            "lora-a",
            "ghost",
            "lora-b",
            "--lora-assignment",
            "round-robin",
        ],
    );
    let entries = by_arrival(read_log(&log));
    let _ = std::fs::remove_dir_all(&dir);
    let b = &run["benchmarks"][0];
    assert_eq!(run["environment"]["model"], "base");
    // Requests 0, 3, 6 named lora-a, 1, 4, 7 ghost (404), 2, 5, 8 lora-b.
    let seen: Vec<(u64, Option<&str>)> = entries
        .iter()
        .map(|e| (e["status"].as_u64().expect("status"), e["model"].as_str()))
        .collect();
    let want: Vec<(u64, Option<&str>)> = (0..9)
        .map(|k| match k % 3 {
            0 => (200, Some("lora-a")),
            1 => (404, None),
            _ => (200, Some("lora-b")),
        })
        .collect();
    assert_eq!(seen, want, "the simulator's log");
    let got = rows(b);
    assert_eq!(
        got,
        [
            ("lora-a".to_string(), 3.0, 3.0, 0.0),
            ("ghost".to_string(), 3.0, 0.0, 3.0),
            ("lora-b".to_string(), 3.0, 3.0, 0.0),
        ]
    );
    assert_eq!(f(b, &["errors", "http_404"]), 3.0);
    let sample = b["error_samples"]["http_404"][0].as_str().unwrap_or("");
    assert!(
        sample.contains("The model `ghost` does not exist."),
        "{sample}"
    );
}

/// A mix's capacity (docs/simulator.md, "Models and LoRA adapters"): with every adapter
/// resident and a full batch, a step costs `S = step_base + B * sum(share_m * per_seq_m)`, and
/// the steady-state closed form holds with it: `C = (ceil(P / S) + n - 1) S`, `B / C` req/s.
#[test]
fn a_mix_of_step_costs_carries_the_closed_form_capacity() {
    let _one = serial();
    let dir = fresh("model-mix", "capacity");
    let log = dir.join("log.jsonl");
    let sim = "max_batch: 16\nstep_base_ms: 4\nstep_per_seq_ms: 0.25\nprefill_overhead_ms: 1\nprefill_rate: 20000\nmax_loras: 1\nmodels:\n  - name: base\n  - name: lora-a\n    lora: true\n    step_per_seq_ms: 0.75\n";
    let cfg = write_sim(&dir, sim, Some(&log));
    let csv = dir.join("run.csv");
    let run = mock_report(
        "run",
        "capacity",
        &dir,
        Some(&cfg),
        &[
            "--rate-type",
            "concurrent",
            "--rate",
            "32",
            "--max-seconds",
            "8",
            "--data",
            "prompt_tokens=256,output_tokens=64",
            "--model",
            "base:1,lora-a:1",
            "--output",
            csv.to_str().expect("utf8"),
        ],
    );
    let entries = read_log(&log);
    let csv = std::fs::read_to_string(&csv).expect("csv");
    let _ = std::fs::remove_dir_all(&dir);
    let b = &run["benchmarks"][0];
    let (batch, n) = (16.0, 64.0);
    let capacity = |per_seq: f64| {
        let s = 4.0 + batch * per_seq;
        let p = 1.0 + 256.0 / 20_000.0 * 1e3;
        batch / (((p / s).ceil() + n - 1.0) * s / 1e3)
    };
    let (mixed, base_only) = (capacity(0.5 * 0.25 + 0.5 * 0.75), capacity(0.25));
    let got = f(b, &["rates", "requests_per_s"]);
    eprintln!("{got:.2} req/s; closed form {mixed:.2} (base alone {base_only:.2})");
    assert!((got - mixed).abs() <= 0.03 * mixed, "{got} vs {mixed}");
    // Each model took its half of the completed requests and of the rate.
    let models = b["models"].as_array().expect("rows");
    let done = f(b, &["requests", "completed"]);
    for m in models {
        let c = f(m, &["completed"]);
        assert!((c - done / 2.0).abs() <= 16.0, "{m}");
        let share = got * c / done;
        assert!((f(m, &["requests_per_s"]) - share).abs() < 1e-6, "{m}");
    }
    // The server saw the same models as the client sent: equal halves of every request.
    let lora = entries.iter().filter(|e| e["model"] == "lora-a").count() as f64;
    let all = entries.len() as f64;
    assert_eq!(all, f(b, &["requests", "total"]), "the simulator's log");
    assert!((lora - all / 2.0).abs() <= 1.0, "{lora} of {all}");
    // The CSV's last column holds the rows as JSON.
    let (head, row) = csv.split_once('\n').expect("csv rows");
    assert!(head.ends_with(",models_json"), "csv header");
    let row = row.trim_end();
    let at = row.rfind(",\"[").expect("the quoted JSON cell, last");
    let cell = row[at + 2..].strip_suffix('"').expect("quoted");
    let cell = cell.replace("\"\"", "\"");
    let rows: Value = serde_json::from_str(&cell).expect("models_json");
    assert_eq!(rows[1]["name"], "lora-a", "{rows}");
}
