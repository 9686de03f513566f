//! Issue 23, images in chat requests, end to end: the real `bench` binary sends synthetic
//! images to its in-process simulator, which charges `ceil(w / 28) * ceil(h / 28) + 2` prompt
//! tokens per image (docs/simulator.md, "Images"); the report's image figures and input tokens
//! are checked against that closed form and the simulator's request log.

use crate::common;

use common::{bench, f, serial, text};

const REQUESTS: u64 = 4;
const P: u64 = 16;

fn run(name: &str, images: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
    let data = format!("prompt_tokens={P},output_tokens=4,{images}");
    let sim = "step_base_ms: 1\nstep_per_seq_ms: 0\n";
    common::logged_synchronous_run("images", name, sim, "openai-chat", REQUESTS, &data, &[])
}

#[test]
fn image_tokens_and_figures_equal_the_closed_form_and_the_log() {
    let _one = serial();
    for (format, keys) in [
        ("png", "image_format=png"),
        ("jpeg", "image_format=jpeg,image_quality=60"),
    ] {
        let (w, h) = (100u32, 60u32);
        let (b, log) = run(
            format,
            &format!("images=3,image_width={w},image_height={h},{keys}"),
        );
        let per_image = u64::from(bench_mock::image_tokens(w, h));
        assert_eq!(per_image, 4 * 3 + 2, "ceil(100/28) * ceil(60/28) + 2");
        assert_eq!(log.len() as u64, REQUESTS);
        for e in &log {
            assert_eq!(e["images"].as_u64(), Some(3), "{e}");
            assert_eq!(e["image_tokens"].as_u64(), Some(3 * per_image));
            assert_eq!(e["prompt_tokens"].as_u64(), Some(P + 3 * per_image));
        }
        let want_prompt = REQUESTS * (P + 3 * per_image);
        assert_eq!(
            f(&b, &["tokens", "prompt", "completed", "total"]),
            want_prompt as f64
        );
        let i = &b["images"];
        assert_eq!(f(i, &["requests"]), REQUESTS as f64, "{format}");
        assert_eq!(f(i, &["count"]), (REQUESTS * 3) as f64);
        assert_eq!(f(i, &["pixels"]), (REQUESTS * 3 * u64::from(w * h)) as f64);
        assert_eq!(f(i, &["count_per_request"]), 3.0);
        assert!(f(i, &["bytes"]) > 0.0);
        assert_eq!(i["prompt_tokens_include_images"], true);
    }
}

#[test]
fn the_console_shows_images_only_when_a_run_had_them_and_bad_options_exit_2() {
    let _one = serial();
    let args = |data: &str| {
        [
            "run",
            "--mock",
            "--backend",
            "openai-chat",
            "--rate-type",
            "synchronous",
            "--max-requests",
            "2",
            "--data",
            data,
        ]
        .map(String::from)
    };
    let with = bench(
        &args("prompt_tokens=8,output_tokens=2,images=1,image_width=32,image_height=32")
            .each_ref()
            .map(String::as_str),
    );
    let out = text(&with.stdout);
    assert!(with.status.success(), "{}", text(&with.stderr));
    assert!(
        out.contains("Images sent:                             2"),
        "{out}"
    );
    assert!(
        out.contains("Input tokens include image tokens:       yes (server usage)"),
        "{out}"
    );
    let without = bench(
        &args("prompt_tokens=8,output_tokens=2")
            .each_ref()
            .map(String::as_str),
    );
    assert!(
        !text(&without.stdout).contains("Images"),
        "{}",
        text(&without.stdout)
    );
    for (data, says) in [
        (
            "prompt_tokens=8,images=1,image_width=5000",
            "image_width must be in 16..=4096, got 5000",
        ),
        (
            "prompt_tokens=8,images=0",
            "images must be in 1..=16, got 0",
        ),
        (
            "prompt_tokens=8,images=1,image_format=jpeg,image_quality=101",
            "image_quality must be in 1..=100, got 101",
        ),
    ] {
        let out = bench(&args(data).each_ref().map(String::as_str));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{data}: {err}");
        assert!(
            err.contains(says) && err.trim().lines().count() == 1,
            "{data}: {err}"
        );
    }
    let other = bench(&[
        "run",
        "--mock",
        "--backend",
        "openai-completions",
        "--rate-type",
        "synchronous",
        "--max-requests",
        "1",
        "--data",
        "prompt_tokens=8,images=1",
    ]);
    assert_eq!(other.status.code(), Some(2));
    assert!(text(&other.stderr)
        .contains("images apply to the openai-chat backend, not openai-completions"));
}
