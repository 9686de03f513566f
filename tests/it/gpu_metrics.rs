//! GPU telemetry and energy (`--gpu-metrics`; docs/metrics.md, "GPU telemetry and energy"), end
//! to end against the simulator's DCGM exporter (`/dcgm/metrics`, docs/simulator.md, "GPU
//! power model": `P = idle + w x running` per replica's GPU).
//!
//! Ground truth: the simulator's request log. With every request admitted on arrival (16
//! closed-loop streams on a batch of 16), a request holds its slot from `submitted_unix_ns` to
//! `last_token_unix_ns`, so the energy its GPU drew over the benchmark is `idle x D + w x Σ
//! held`, `D` the benchmark's span; the output tokens are the log's. The closed form
//! (docs/simulator.md): each stream's requests follow each other, a cycle of `T` holding the
//! slot for `H` of it, so `J/token = (idle T / B + w H) / n`.

use crate::common;

use common::{f, fresh, mock_report, read_log, serial, text, write_sim};

const IDLE_W: f64 = 50.0;
const SEQ_W: f64 = 10.0;
const SIM: &str = "max_batch: 16\nstep_base_ms: 4\nstep_per_seq_ms: 0.25\nprefill_overhead_ms: 1\nprefill_rate: 20000\ngpu_idle_w: 50\ngpu_per_seq_w: 10\ngpu_memory_mib: 40000\n";

/// One 6 s closed loop of 16 streams with the simulator's exporter scraped: the JSON report, the
/// simulator's request log, and the HTML and CSV files' text.
fn gpu_run() -> (serde_json::Value, Vec<serde_json::Value>, String, String) {
    let dir = fresh("gpu", "energy");
    let log = dir.join("log.jsonl");
    let cfg = write_sim(&dir, SIM, Some(&log));
    let (html, csv) = (dir.join("run.html"), dir.join("run.csv"));
    let run = mock_report(
        "run",
        "gpu",
        &dir,
        Some(&cfg),
        &[
            "--rate-type",
            "concurrent",
            "--rate",
            "16",
            "--max-seconds",
            "6",
            "--data",
            "prompt_tokens=256,output_tokens=64",
            "--gpu-metrics",
            "/dcgm/metrics",
            "--output",
            html.to_str().expect("utf8"),
            "--output",
            csv.to_str().expect("utf8"),
        ],
    );
    let entries = read_log(&log);
    let (html, csv) = (
        std::fs::read_to_string(&html).expect("html"),
        std::fs::read_to_string(&csv).expect("csv"),
    );
    let _ = std::fs::remove_dir_all(&dir);
    (run, entries, html, csv)
}

#[test]
fn energy_per_token_is_the_power_models_over_the_logged_slot_time() {
    let _one = serial();
    let (run, entries, html, csv) = gpu_run();
    let b = &run["benchmarks"][0];
    let g = &b["gpu_metrics"];
    eprintln!("{g}");
    let ns = |e: &serde_json::Value, k: &str| e[k].as_u64().unwrap_or(0) as f64 / 1e9;
    let held: f64 = entries
        .iter()
        .map(|e| ns(e, "last_token_unix_ns") - ns(e, "submitted_unix_ns"))
        .sum();
    let tokens: f64 = entries.iter().map(|e| f(e, &["output_tokens"])).sum();
    let span = f(b, &["server_metrics", "duration_s"]);
    let truth = IDLE_W * span + SEQ_W * held;
    let energy = f(g, &["energy_j"]);
    eprintln!(
        "energy {energy:.1} J, log {truth:.1} J ({span:.3} s, {held:.2} slot-s, {tokens} tokens)"
    );
    // The exporter's scrapes bracket the span by a few milliseconds of idle power each side.
    assert!(
        (energy - truth).abs() <= 0.01 * truth,
        "{energy} vs {truth}"
    );
    let out = f(b, &["tokens", "output", "completed", "total"])
        + f(b, &["tokens", "output", "incomplete", "total"])
        + f(b, &["tokens", "output", "errored", "total"]);
    assert_eq!(out, tokens, "bench's output tokens against the log's");
    assert!((f(g, &["j_per_output_token"]) - energy / tokens).abs() < 1e-9);
    let completed = f(b, &["requests", "completed"]);
    assert_eq!(
        completed,
        entries.len() as f64,
        "every request of the log completed"
    );
    assert!((f(g, &["j_per_request"]) * completed - energy).abs() < 1e-6 * energy);
    // The closed form, from the log's mean cycle and hold: every stream's requests back to back.
    let n = entries.len() as f64;
    let cycle = 16.0 * span / n;
    let hold = held / n;
    let model = (IDLE_W * cycle / 16.0 + SEQ_W * hold) / 64.0;
    let got = f(g, &["j_per_output_token"]);
    eprintln!("J/token {got:.5}, closed form {model:.5} (cycle {cycle:.4} s, held {hold:.4} s)");
    assert!((got - model).abs() <= 0.03 * model, "{got} vs {model}");
    // The gauges are scrapes of instantaneous values (their exact model is the simulator's
    // paused-clock test, `gpu::tests`): between the idle and the full batch's power, a busy
    // GPU, its memory as configured.
    let power = f(g, &["power_w_mean"]);
    assert!((IDLE_W..=IDLE_W + 16.0 * SEQ_W).contains(&power), "{power}");
    let util = f(g, &["utilization_pct_mean"]);
    assert!(util > 50.0 && util <= 100.0, "{util}");
    assert_eq!(f(g, &["memory_used_mib_mean"]), 40_000.0);
    assert_eq!(f(g, &["gpus"]), 1.0);
    // Every output shows it.
    assert!(html.contains("<h3>GPUs (1 over 1 exporter)</h3>"), "html");
    let cell: f64 = common::csv_cell(&csv, "gpu_energy_j")
        .parse()
        .expect("a number");
    assert!(
        (cell - energy).abs() < 1e-6 * energy,
        "csv {cell} vs {energy}"
    );
}

/// Bad values are one line naming the flag or key, exit 2; an exporter that fails is one
/// warning and the run goes on without its figures; a password in its URL is never shown;
/// the profile key and `--show-config` carry the URLs.
#[test]
fn bad_exporters_are_usage_errors_or_one_warning() {
    use common::bench;
    let base = [
        "run",
        "--mock",
        "--rate-type",
        "constant",
        "--rate",
        "20",
        "--max-seconds",
        "1",
        "--console",
        "vllm",
    ];
    for (value, culprit) in [
        (
            "ftp://gpu:9400/metrics",
            "--gpu-metrics `ftp://gpu:9400/metrics`",
        ),
        ("http://", "--gpu-metrics `http://`"),
        ("/dcgm/metrics,", "--gpu-metrics ``"),
    ] {
        let out = bench(&[&base[..], &["--gpu-metrics", value]].concat());
        common::usage_error(&out, culprit, value);
    }
    // A path the simulator does not serve, and a closed port with a password in its URL.
    let out = bench(
        &[
            &base[..],
            &[
                "--gpu-metrics",
                "/nope,http://user:hunter2@127.0.0.1:9/metrics",
            ],
        ]
        .concat(),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("GPU metrics from http://127.0.0.1:"),
        "{stderr}"
    );
    assert!(stderr.contains("/nope: answered 404"), "{stderr}");
    assert!(
        stderr.contains("GPU metrics from http://127.0.0.1:9/metrics"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2") && !stdout.contains("hunter2"));
    assert!(
        !stdout.contains("GPU metrics"),
        "no section without figures: {stdout}"
    );
    // The vLLM console's section with the simulator's exporter.
    let out = bench(&[&base[..], &["--gpu-metrics", "/dcgm/metrics"]].concat());
    let stdout = text(&out.stdout);
    assert!(stdout.contains("GPU metrics"), "{stdout}");
    assert!(stdout.contains("Energy per output token (mJ):"), "{stdout}");
    // The profile key, written back by --show-config without the password.
    let dir = fresh("gpu", "profile");
    let profile = dir.join("p.yaml");
    std::fs::write(
        &profile,
        "mock: true\nrate_type: constant\nrate: 5\ngpu_metrics: [/dcgm/metrics, \"http://u:hunter2@node:9400/metrics\"]\n",
    )
    .expect("profile");
    let out = bench(&[
        "run",
        "--profile",
        profile.to_str().expect("utf8"),
        "--show-config",
    ]);
    let shown = text(&out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(shown.contains("gpu_metrics:"), "{shown}");
    assert!(shown.contains("http://node:9400/metrics"), "{shown}");
    assert!(!shown.contains("hunter2"), "{shown}");
    let out = bench(&[&base[..], &["--gpu-metrics", "gpu-node:9400"]].concat());
    assert_eq!(out.status.code(), Some(2));
}
