//! Issue 12 end to end: the `bench` binary against a loopback capture server (headers and
//! bodies asserted as received) and against the simulator (vLLM's result file, strict mode).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Output;
use std::sync::{Arc, Mutex};

use common::text;

/// One request the capture server received: lower-cased header lines and the body.
#[derive(Debug, Clone)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How the capture server answers generation requests.
#[derive(Clone, Copy)]
enum Reply {
    /// A short SSE stream of two tokens with usage.
    Stream,
    /// 400 with an OpenAI-style error naming `min_tokens`.
    RejectMinTokens,
    /// Headers, one token, then silence (the connection stays open).
    Stall,
}

/// A loopback HTTP/1.1 server that records every request; `/v1/models` lists model `m` owned
/// by `owner`. One thread per connection, `Connection: close`.
fn capture(owner: &'static str, reply: Reply) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { return };
            let log = log.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().expect("clone"));
                let mut line = String::new();
                if r.read_line(&mut line).is_err() {
                    return;
                }
                let mut headers = Vec::new();
                let mut len = 0usize;
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).is_err() || h.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
                        if k == "content-length" {
                            len = v.parse().unwrap_or(0);
                        }
                        headers.push((k, v));
                    }
                }
                let mut body = vec![0; len];
                let _ = r.read_exact(&mut body);
                let body = String::from_utf8_lossy(&body).into_owned();
                let is_models = line.contains("/models");
                log.lock().expect("lock").push(Seen {
                    line: line.trim().to_string(),
                    headers,
                    body,
                });
                let answer = |status: &str, ctype: &str, body: &str| {
                    format!(
                        "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                if is_models {
                    let b = format!(
                        r#"{{"object":"list","data":[{{"id":"m","object":"model","owned_by":"{owner}"}}]}}"#
                    );
                    let _ = conn.write_all(answer("200 OK", "application/json", &b).as_bytes());
                    return;
                }
                let ev = |t: &str| {
                    format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{t}\"}}]}}\n\n")
                };
                match reply {
                    Reply::Stream => {
                        let b = format!(
                            "{}{}data: {{\"choices\":[{{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}}],\"usage\":{{\"prompt_tokens\":8,\"completion_tokens\":2}}}}\n\ndata: [DONE]\n\n",
                            ev(" a"),
                            ev(" b")
                        );
                        let _ =
                            conn.write_all(answer("200 OK", "text/event-stream", &b).as_bytes());
                    }
                    Reply::RejectMinTokens => {
                        let b = r#"{"error":{"message":"Unrecognized request argument supplied: min_tokens","type":"invalid_request_error"}}"#;
                        let _ = conn
                            .write_all(answer("400 Bad Request", "application/json", b).as_bytes());
                    }
                    Reply::Stall => {
                        let _ = conn.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
                        );
                        let e = ev(" a");
                        let _ = conn.write_all(format!("{:x}\r\n{e}\r\n", e.len()).as_bytes());
                        let _ = conn.flush();
                        std::thread::sleep(std::time::Duration::from_secs(30));
                    }
                }
            });
        }
    });
    (url, seen)
}

fn bench(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = common::bench_command();
    c.args(args)
        .env("RUST_LOG", "warn")
        .env_remove("BENCH_API_KEY")
        .env_remove("OPENAI_API_KEY");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run bench")
}

fn tmp(name: &str) -> PathBuf {
    common::fresh("i12", name)
}

fn posts(seen: &Arc<Mutex<Vec<Seen>>>) -> Vec<Seen> {
    seen.lock()
        .expect("lock")
        .iter()
        .filter(|s| s.line.starts_with("POST"))
        .cloned()
        .collect()
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

const SHORT: [&str; 8] = [
    "--rate-type",
    "synchronous",
    "--max-requests",
    "2",
    "--data",
    "prompt_tokens=8,output_tokens=4",
    "--console",
    "none",
];

#[test]
fn headers_key_fallback_extra_body_and_sampling_reach_the_server() {
    let (url, seen) = capture("openai", Reply::Stream);
    let mut args = vec!["run", "--target", &url, "-q"];
    args.extend(SHORT);
    args.extend([
        "--header",
        "X-Tenant: t1",
        "-H",
        "X-Gateway=gw-secret",
        "--extra-body",
        r#"{"user": "u1", "stream_options": {"continuous_usage_stats": true}}"#,
        "--temperature",
        "0.5",
        "--top-p",
        "0.9",
        "--top-k",
        "-1",
    ]);
    let out = bench(&args, &[("OPENAI_API_KEY", "sk-fallback")]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let p = posts(&seen);
    assert_eq!(p.len(), 2, "{p:?}");
    for r in &p {
        assert_eq!(r.header("x-tenant"), Some("t1"));
        assert_eq!(r.header("x-gateway"), Some("gw-secret"));
        assert_eq!(r.header("authorization"), Some("Bearer sk-fallback"));
        let b = json(&r.body);
        assert_eq!(b["temperature"], 0.5);
        assert_eq!(b["top_p"], 0.9);
        assert_eq!(b["top_k"], -1);
        assert_eq!(b["user"], "u1");
        assert_eq!(b["max_tokens"], 4);
        assert_eq!(
            b["stream_options"],
            serde_json::json!({"include_usage": true, "continuous_usage_stats": true})
        );
        // owned_by "openai": not vLLM, so no vLLM-only fields.
        assert!(
            b.get("ignore_eos").is_none() && b.get("min_tokens").is_none(),
            "{b}"
        );
    }
    assert!(stderr.contains("--vllm-extensions on"), "{stderr}");
    assert!(!stderr.contains("gw-secret") && !stderr.contains("sk-fallback"));
    assert!(
        !stderr.contains('\u{1b}'),
        "no colour codes when stderr is a pipe: {stderr:?}"
    );
}

#[test]
fn vllm_fields_follow_the_server_and_the_switches() {
    let body_of = |owner: &'static str, extra: &[&str]| {
        let (url, seen) = capture(owner, Reply::Stream);
        let mut args = vec!["run", "--target", &url, "-q"];
        args.extend(SHORT);
        args.extend(extra);
        let out = bench(&args, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        json(&posts(&seen)[0].body)
    };
    let b = body_of("vllm", &[]);
    assert_eq!(
        (b["ignore_eos"].clone(), b["min_tokens"].clone()),
        (true.into(), 4.into())
    );
    let b = body_of("vllm", &["--ignore-eos=false"]);
    assert!(
        b.get("ignore_eos").is_none() && b.get("min_tokens").is_none(),
        "{b}"
    );
    let b = body_of("vllm", &["--vllm-extensions", "off"]);
    assert!(
        b.get("ignore_eos").is_none() && b.get("min_tokens").is_none(),
        "{b}"
    );
    let b = body_of("someone", &["--vllm-extensions", "on"]);
    assert_eq!(b["min_tokens"], 4);
}

#[test]
fn a_400_naming_a_vllm_field_gets_a_one_line_hint() {
    let (url, _seen) = capture("vllm", Reply::RejectMinTokens);
    let mut args = vec!["run", "--target", &url, "-q"];
    args.extend(SHORT);
    let out = bench(&args, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let hints: Vec<&str> = stderr.lines().filter(|l| l.starts_with("hint:")).collect();
    assert_eq!(hints.len(), 1, "{stderr}");
    assert!(hints[0].contains("min_tokens") && hints[0].contains("--vllm-extensions off"));
}

#[test]
fn the_simulator_in_strict_mode_refuses_vllm_fields_and_auto_leaves_them_out() {
    let dir = tmp("strict");
    let cfg = dir.join("strict.yaml");
    std::fs::write(&cfg, "strict: true\nstep_base_ms: 0\nstep_per_seq_ms: 0\nprefill_overhead_ms: 0\nprefill_rate: 0\n").expect("write");
    let c = cfg.to_str().expect("utf8");
    let mut args = vec!["run", "--mock", "--mock-config", c, "-q"];
    args.extend(SHORT);
    // auto: the strict simulator lists its model as owned_by "system": no vLLM fields, no 400.
    let out = bench(&args, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // forced on: every request is refused, with the hint.
    args.extend(["--vllm-extensions", "on"]);
    let out = bench(&args, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("hint:") && stderr.contains("--vllm-extensions off"),
        "{stderr}"
    );
}

#[test]
fn an_idle_timeout_ends_a_stalled_stream() {
    let (url, _seen) = capture("vllm", Reply::Stall);
    let started = std::time::Instant::now();
    let out = bench(
        &[
            "run",
            "--target",
            &url,
            "-q",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "1",
            "--data",
            "prompt_tokens=8,output_tokens=4",
            "--console",
            "vllm",
            "--idle-timeout",
            "0.5",
        ],
        &[],
    );
    let stderr = text(&out.stderr);
    assert!(
        started.elapsed().as_secs() < 20,
        "the stall did not hold the run"
    );
    assert_eq!(out.status.code(), Some(1), "nothing completed: {stderr}");
    assert!(stderr.contains("timeout"), "{stderr}");
}

/// The Done-when command of issue 12, scaled down to run in a second: vLLM's flags, vLLM's
/// result file with vLLM's field names.
#[test]
fn a_vllm_bench_serve_command_line_writes_vllms_result_file() {
    let dir = tmp("vllm-result");
    let d = dir.to_str().expect("utf8");
    let out = bench(
        &[
            "run",
            "--mock",
            "--request-rate",
            "50",
            "--num-prompts",
            "10",
            "--dataset-name",
            "random",
            "--random-input-len",
            "64",
            "--random-output-len",
            "8",
            "--save-result",
            "--result-dir",
            d,
            "--metadata",
            "gpu=none",
            "--label",
            "lbl",
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
            "--metric-percentiles",
            "50,99",
            "--disable-tqdm",
        ],
        &[],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", text(&out.stderr));
    assert!(
        stdout.contains("Traffic request rate: 50.0\nBurstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: None\n"),
        "{stdout}"
    );
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().and_then(|n| n.to_str()).expect("name");
    assert!(
        name.starts_with("lbl-50.0qps-mock-model-") && name.ends_with(".json"),
        "{name}"
    );
    let v = json(&std::fs::read_to_string(&files[0]).expect("read"));
    assert_eq!(v["completed"], 10);
    assert_eq!(v["failed"], 0);
    assert_eq!(v["num_prompts"], 10);
    assert_eq!(v["request_rate"], 50.0);
    assert_eq!(v["burstiness"], 1.0);
    assert_eq!(v["max_concurrency"], serde_json::Value::Null);
    assert_eq!(v["total_input_tokens"], 640);
    assert_eq!(v["total_output_tokens"], 80);
    assert_eq!(v["gpu"], "none");
    assert_eq!(v["label"], "lbl");
    assert_eq!(v["backend"], "openai");
    assert_eq!(v["model_id"], "mock-model");
    let dur = v["duration"].as_f64().expect("duration");
    let thr = v["request_throughput"].as_f64().expect("throughput");
    assert!(
        (thr - 10.0 / dur).abs() < 1e-6 * thr.max(1.0),
        "{thr} vs {dur}"
    );
    let out_thr = v["output_throughput"].as_f64().expect("output");
    assert!((out_thr - 80.0 / dur).abs() < 1e-6 * out_thr.max(1.0));
    for m in ["ttft", "tpot", "itl", "e2el"] {
        for f in ["mean", "median", "std", "p50", "p99"] {
            let k = format!("{f}_{m}_ms");
            assert!(v[&k].as_f64().is_some_and(|x| x >= 0.0), "{k}: {v}");
        }
    }
    assert!(v["p99_ttft_ms"].as_f64() >= v["median_ttft_ms"].as_f64());
    assert!(v["max_concurrent_requests"]
        .as_u64()
        .is_some_and(|c| c >= 1));
    assert!(v.get("request_goodput").is_some_and(|g| g.is_null()));
}

#[test]
fn completions_and_man_page_come_from_the_parser() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = bench(&["completions", shell], &[]);
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let s = text(&out.stdout);
        for flag in [
            "request-rate",
            "vllm-extensions",
            "save-result",
            "mock-server",
        ] {
            assert!(s.contains(flag), "{shell} completions lack {flag}");
        }
    }
    let out = bench(&["completions", "tcsh"], &[]);
    assert_eq!(out.status.code(), Some(2), "unknown shell is a usage error");
    let out = bench(&["man"], &[]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    assert!(
        s.contains(".TH bench 1") && s.contains("completions"),
        "{s}"
    );
}

#[test]
fn the_guidellm_metadata_block_has_the_seeds_args_and_worker_fields() {
    let out = bench(
        &[
            "run",
            "--mock",
            "--rate-type",
            "synchronous",
            "--max-seconds",
            "1",
            "--warmup",
            "0.1",
            "--data",
            "prompt_tokens=16,output_tokens=4",
            "--console",
            "guidellm",
            "-q",
        ],
        &[],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for want in [
        "    Args:max_number=None, max_duration=1.0, warmup_number=None, warmup_duration=0.1, cooldown_number=None, cooldown_duration=None\n",
        "    Worker:type_='generative_requests_worker' backend_type='openai-completions' backend_target='http://127.0.0.1:",
        "backend_model='mock-model' backend_info={'timeout': 3600.0, 'http2': False, 'authorization': False, 'text_completions_path': '/v1/completions'}\n",
        "    Request Loader:type_='generative_request_loader' data='prompt_tokens=16,output_tokens=4' data_args=None processor=None\n",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in\n{stdout}");
    }
}

#[test]
fn data_column_picks_the_prompt_column_of_a_file() {
    let dir = tmp("column");
    let f = dir.join("q.jsonl");
    std::fs::write(
        &f,
        "{\"prompt\": \"not this\", \"question\": \"the asked question\"}\n",
    )
    .expect("write");
    let (url, seen) = capture("vllm", Reply::Stream);
    let out = bench(
        &[
            "run",
            "--target",
            &url,
            "-q",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "1",
            "--console",
            "none",
            "--data",
            f.to_str().expect("utf8"),
            "--data-column",
            "question",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(json(&posts(&seen)[0].body)["prompt"], "the asked question");
}

/// `--cacert` makes a server with a private CA trusted; without it the same run fails.
#[test]
fn cacert_trusts_the_simulators_self_signed_certificate() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let server = rt
        .block_on(bench_mock::MockServer::start(bench_mock::MockConfig {
            tls: true,
            ..bench_mock::MockConfig::zero_delay()
        }))
        .expect("TLS simulator");
    let dir = tmp("cacert");
    let pem = dir.join("ca.pem");
    std::fs::write(&pem, server.tls_certificate_pem().expect("a certificate")).expect("write");
    let url = server.url().replace("127.0.0.1", "localhost");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--target", &url, "-q"];
        args.extend(SHORT);
        args.extend(extra);
        bench(&args, &[])
    };
    let without = run(&[]);
    assert_ne!(without.status.code(), Some(0), "an unknown CA is refused");
    let with = run(&["--cacert", pem.to_str().expect("utf8")]);
    assert!(with.status.success(), "{}", text(&with.stderr));
    rt.block_on(server.shutdown());
}

/// `--data book.txt` over the tgi-book profile sends 10,000-token slices of the book to TGI's
/// endpoint (the simulator's request log counts what it received).
#[test]
fn a_book_over_the_tgi_book_profile_is_sliced_at_the_profiles_length() {
    let dir = tmp("book");
    let book = dir.join("book.txt");
    let corpus = bench_tokenizer::corpus::builtin_corpus(3, 30_000);
    std::fs::write(&book, &corpus).expect("write");
    let log = dir.join("log.jsonl");
    let cfg = dir.join("mock.yaml");
    std::fs::write(
        &cfg,
        format!(
            "step_base_ms: 0\nstep_per_seq_ms: 0\nprefill_overhead_ms: 0\nprefill_rate: 0\nlog_requests: {}\n",
            log.display()
        ),
    )
    .expect("write");
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/tgi-book.yaml");
    let out = bench(
        &[
            "run",
            "--mock",
            "--mock-config",
            cfg.to_str().expect("utf8"),
            "--profile",
            profile,
            "--data",
            book.to_str().expect("utf8"),
            "--rate",
            "2",
            "--console",
            "none",
            "-q",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(json)
        .collect();
    assert_eq!(lines.len(), 2, "a burst of 2");
    for l in &lines {
        assert_eq!(l["endpoint"], "/generate_stream");
        assert_eq!(l["prompt_tokens"], 10_000, "{l}");
    }
}

/// Hugging Face datasets (issue 47) from a hub-cache folder tree this test writes: guidellm's
/// `--data ORG/NAME` (with `subset=`/`split=`) and vLLM's `--dataset-name hf` flags send the
/// split's rows, offline; a split, subset or dataset that is not there is a usage error (exit
/// 2) naming what is missing and what exists, and an unknown `--dataset-name` lists the
/// supported ones.
#[test]
fn hugging_face_datasets_are_read_from_the_hub_cache() {
    use bench_test_support::parquet::{hub_snapshot, write_prompts};
    let cache = tmp("hf-cache");
    let snap = hub_snapshot(&cache, "openai/gsm8k", "main", "0123abcd");
    write_prompts(
        &snap.join("main/train-00000-of-00001.parquet"),
        "question",
        &[("a train question", 3)],
        8,
    );
    write_prompts(
        &snap.join("main/test-00000-of-00001.parquet"),
        "question",
        &[
            ("the first test question", 3),
            ("the second test question", 5),
        ],
        1,
    );
    let cache_s = cache.to_str().expect("utf8").to_string();
    let env = [("HF_HUB_CACHE", cache_s.as_str()), ("HF_HUB_OFFLINE", "1")];
    let run = |data: &[&str]| {
        let (url, seen) = capture("vllm", Reply::Stream);
        let mut args = vec![
            "run",
            "--target",
            &url,
            "-q",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "2",
            "--console",
            "none",
        ];
        args.extend(data);
        let out = bench(&args, &env);
        (out, posts(&seen))
    };
    for data in [
        &["--data", "openai/gsm8k"][..],
        &["--data", "path=openai/gsm8k,subset=main,split=test"],
        &[
            "--dataset-name",
            "hf",
            "--dataset-path",
            "openai/gsm8k",
            "--hf-subset",
            "main",
            "--hf-split",
            "test",
            "--hf-output-len",
            "7",
        ],
    ] {
        let (out, posts) = run(data);
        assert!(out.status.success(), "{data:?}: {}", text(&out.stderr));
        let prompts: Vec<String> = posts
            .iter()
            .map(|p| json(&p.body)["prompt"].as_str().unwrap_or("").to_string())
            .collect();
        if data[1] == "openai/gsm8k" {
            // One subset, the default split: train (one row, sent again as the data cycle).
            assert_eq!(prompts, ["a train question"; 2], "{data:?}");
        } else {
            assert_eq!(
                prompts,
                ["the first test question", "the second test question"],
                "{data:?}"
            );
        }
        if data[0] == "--dataset-name" {
            assert!(posts.iter().all(|p| json(&p.body)["max_tokens"] == 7));
        }
    }
    for (data, says) in [
        (
            &["--data", "path=openai/gsm8k,split=dev"][..],
            &["openai/gsm8k", "\"dev\"", "test, train"][..],
        ),
        (
            &["--data", "someone/absent"],
            &[
                "someone/absent",
                "huggingface-cli download --repo-type dataset",
            ],
        ),
        (
            &["--dataset-name", "nope", "--dataset-path", "x"],
            &["random, sharegpt, book, custom, hf"],
        ),
        (
            &["--dataset-name", "random", "--hf-split", "test"],
            &["--hf-* flags apply to --dataset-name hf"],
        ),
    ] {
        let (out, _) = run(data);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{data:?}: {err}");
        for s in says {
            assert!(err.contains(s), "{data:?}: {err}");
        }
    }
}

/// vLLM's other dataset names (issue 47), each onto bench's own data keys, as the server
/// received them: `prefix_repetition` (prompts of one prefix share it, prefixes differ from the
/// first word), `sonnet` (every prompt starts with the text's beginning), `random-mm`
/// (images of the one bucket's size with each chat prompt); flags of one name with another and
/// a bucket config of several sizes are usage errors.
#[test]
fn vllms_other_dataset_names_map_onto_bench_data() {
    let run = |extra: &[&str]| {
        let (url, seen) = capture("vllm", Reply::Stream);
        let mut args = vec![
            "run",
            "--target",
            &url,
            "-q",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "4",
            "--console",
            "none",
        ];
        args.extend(extra);
        let out = bench(&args, &[]);
        assert!(out.status.success(), "{extra:?}: {}", text(&out.stderr));
        posts(&seen)
            .iter()
            .map(|p| json(&p.body))
            .collect::<Vec<_>>()
    };
    let bodies = run(&[
        "--dataset-name",
        "prefix_repetition",
        "--prefix-repetition-prefix-len",
        "16",
        "--prefix-repetition-suffix-len",
        "8",
        "--prefix-repetition-num-prefixes",
        "2",
        "--prefix-repetition-output-len",
        "5",
    ]);
    let prompts: Vec<&str> = bodies.iter().filter_map(|b| b["prompt"].as_str()).collect();
    assert_eq!(prompts.len(), 4);
    let shared = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    assert!(shared(prompts[0], prompts[2]) > 16, "{prompts:?}");
    assert!(shared(prompts[1], prompts[3]) > 16, "{prompts:?}");
    // Prefixes differ from their first word (a fresh salt draws the words each run).
    let word = |p: &str| p.split_whitespace().next().map(str::to_string);
    assert_ne!(word(prompts[0]), word(prompts[1]), "{prompts:?}");
    assert!(bodies.iter().all(|b| b["max_tokens"] == 5));

    let dir = tmp("sonnet");
    let sonnet = dir.join("sonnet.txt");
    let lines: String = (0..100)
        .map(|i| format!("When I do count the clock that tells the time {i}\n"))
        .collect();
    std::fs::write(&sonnet, &lines).expect("write");
    let bodies = run(&[
        "--dataset-name",
        "sonnet",
        "--dataset-path",
        sonnet.to_str().expect("utf8"),
        "--sonnet-input-len",
        "40",
        "--sonnet-prefix-len",
        "10",
        "--sonnet-output-len",
        "6",
    ]);
    let first = bodies[0]["prompt"].as_str().expect("prompt");
    let prefix = first.split('\n').next().expect("prefix");
    assert!(lines.starts_with(prefix) && !prefix.is_empty());
    for b in &bodies {
        assert!(b["prompt"].as_str().expect("prompt").starts_with(prefix));
        assert_eq!(b["max_tokens"], 6);
    }

    let bodies = run(&[
        "--backend",
        "openai-chat",
        "--dataset-name",
        "random-mm",
        "--random-input-len",
        "16",
        "--random-output-len",
        "4",
        "--random-mm-base-items-per-request",
        "2",
        "--random-mm-bucket-config",
        "{(64, 32, 1): 1.0}",
    ]);
    for b in &bodies {
        let parts = b["messages"][0]["content"].as_array().expect("parts");
        let urls: Vec<&str> = parts
            .iter()
            .filter_map(|p| p["image_url"]["url"].as_str())
            .collect();
        assert_eq!(urls.len(), 2, "{b}");
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD
            .decode(urls[0].trim_start_matches("data:image/png;base64,"))
            .expect("base64");
        let (w, h) = bench_core::image_size(&png).expect("a PNG");
        assert_eq!((w, h), (32, 64), "width and height of (HEIGHT, WIDTH, 1)");
        assert_eq!(b["max_completion_tokens"], 4);
    }

    for (args, says) in [
        (
            &[
                "--dataset-name",
                "random-mm",
                "--random-mm-bucket-config",
                "{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}",
            ][..],
            "2 image buckets",
        ),
        (
            &["--dataset-name", "random", "--sonnet-input-len", "40"],
            "--sonnet-* flags apply to --dataset-name sonnet",
        ),
        (
            &[
                "--dataset-name",
                "sonnet",
                "--dataset-path",
                "x.txt",
                "--sonnet-input-len",
                "100",
                "--sonnet-prefix-len",
                "200",
            ],
            "must exceed",
        ),
    ] {
        let out = bench(
            &[&["run", "--mock", "--max-requests", "1"][..], args].concat(),
            &[],
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
}
