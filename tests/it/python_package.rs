//! The Python package of the binary (pyproject.toml, docs/packaging.md): maturin builds the
//! wheel, a fresh virtual environment installs it offline, and the `bench` it installs is this
//! crate at Cargo's version and runs a benchmark against its simulator.
//!
//! The wheel is built from the test build's own artifacts, with no release build:
//! `maturin build --profile dev --strip false` runs `cargo rustc --profile dev --bin bench` (and
//! `--bin inference-bench`) with the test build's target directory as cargo's build directory
//! (`CARGO_BUILD_BUILD_DIR`), where cargo finds the units it already compiled, and a scratch
//! target directory for the linked binaries, so `target/debug/bench`, which the other tests
//! run, is never replaced. docs/packaging.md, "The test", says what it compiles again and how
//! long it takes. maturin and PyPI's `trove-classifiers` come from the virtual environment
//! `.ci/setup` makes (`$BENCH_CACHE/maturin-venv`, default `~/.cache/bench`); nothing is
//! downloaded.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

fn cache() -> PathBuf {
    std::env::var_os("BENCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/bench")
        })
}

/// The venv `.ci/setup` installs maturin and trove-classifiers into.
fn tools() -> PathBuf {
    let v = cache().join("maturin-venv/bin");
    assert!(
        v.join("maturin").exists(),
        "{} is missing: run .ci/setup (installs PyPI's maturin)",
        v.join("maturin").display()
    );
    v
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The target directory the test build wrote (`<target>/debug/bench`), which is also its build
/// directory (no `build-dir` is configured).
fn target_dir() -> PathBuf {
    let bench = Path::new(env!("CARGO_BIN_EXE_bench"));
    bench
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf()
}

fn ok(o: Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: {:?}\n{}\n{}",
        o.status.code(),
        common::text(&o.stdout),
        common::text(&o.stderr)
    );
    common::text(&o.stdout)
}

/// Whether `var` is one cargo sets for the test process (not a setting of the build): the
/// build of the wheel must see the environment `cargo test` was started in, or build scripts
/// that watch such a variable (ring's watches `CARGO_MANIFEST_DIR`) run again and everything
/// above them is compiled again.
fn set_by_cargo_for_the_test(var: &str) -> bool {
    var == "CARGO"
        || [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_CRATE_",
            "CARGO_PRIMARY_",
            "CARGO_BIN_",
            "CARGO_TARGET_TMPDIR",
        ]
        .iter()
        .any(|p| var.starts_with(p))
}

/// Builds the wheel into `dist` (linking in `scratch`) and returns its path.
fn build_wheel(dist: &Path, scratch: &Path) -> PathBuf {
    let started = Instant::now();
    let mut cmd = Command::new(tools().join("maturin"));
    for (k, _) in std::env::vars_os() {
        if set_by_cargo_for_the_test(&k.to_string_lossy()) {
            cmd.env_remove(k);
        }
    }
    let build_dir =
        std::env::var_os("CARGO_BUILD_BUILD_DIR").unwrap_or_else(|| target_dir().into());
    let o = cmd
        .env("CARGO_BUILD_BUILD_DIR", build_dir)
        .args(["build", "--profile", "dev", "--strip", "false"])
        .arg("--target-dir")
        .arg(scratch)
        .arg("--out")
        .arg(dist)
        .current_dir(root())
        .output()
        .expect("run maturin");
    let log = common::text(&o.stderr);
    ok(o, "maturin build");
    eprintln!(
        "wheel built in {:.1} s from the test build's artifacts:\n{log}",
        started.elapsed().as_secs_f64()
    );
    let wheels: Vec<PathBuf> = std::fs::read_dir(dist)
        .expect("dist")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    wheels[0].clone()
}

/// The installed distribution's metadata checked against pyproject.toml (read with Python's
/// tomllib) and PyPI's classifier list, its version against Cargo's, and its files.
const CHECK_METADATA: &str = r#"
import importlib.metadata as m, sys, tomllib
from trove_classifiers import classifiers as known
want = tomllib.load(open(sys.argv[1], "rb"))["project"]
md = m.metadata("inference-bench")
assert "version" not in want and want["dynamic"] == ["version"], "the version is Cargo's alone"
assert md["Version"] == sys.argv[2], (md["Version"], sys.argv[2])
assert md["Name"] == want["name"] == "inference-bench", md["Name"]
assert md["Summary"] == want["description"], md["Summary"]
assert md["License-Expression"] == want["license"] == "Apache-2.0", md["License-Expression"]
assert md["Requires-Python"] == want["requires-python"], md["Requires-Python"]
assert md.get_all("Classifier") == want["classifiers"], md.get_all("Classifier")
bad = [c for c in want["classifiers"] if c not in known]
assert not bad, f"not PyPI classifiers: {bad}"
urls = dict(u.split(", ", 1) for u in md.get_all("Project-URL"))
assert urls == want["urls"] and all(u.startswith("https://") for u in urls.values()), urls
assert md["Description-Content-Type"].startswith("text/markdown")
files = {str(f) for f in m.files("inference-bench")}
print(sorted(f for f in files if "/bin/" in f or f.startswith("../")))
"#;

#[test]
fn the_wheel_installs_bench_at_cargos_version_into_a_fresh_venv_and_runs_the_simulator() {
    let work = common::fresh("python", "wheel");
    let version = env!("CARGO_PKG_VERSION");
    let wheel = build_wheel(&work.join("dist"), &work.join("target"));
    let name = wheel
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with(&format!("inference_bench-{version}-py3-none-")),
        "{name}"
    );

    let venv = work.join("venv");
    ok(
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .expect("python3 -m venv"),
        "python3 -m venv",
    );
    let (bin, py) = (venv.join("bin"), venv.join("bin/python"));
    ok(
        Command::new(&py)
            .args(["-m", "pip", "install", "--no-index", "--no-deps", "-q"])
            .arg("--disable-pip-version-check")
            .arg(&wheel)
            .output()
            .expect("pip install"),
        "pip install the wheel",
    );
    let files = ok(
        Command::new(tools().join("python"))
            .env("PYTHONPATH", venv_site(&venv))
            .args(["-c", CHECK_METADATA])
            .arg(root().join("pyproject.toml"))
            .arg(version)
            .output()
            .expect("python"),
        "the metadata",
    );
    assert!(
        files.contains("/bin/bench'") && files.contains("/bin/inference-bench'"),
        "{files}"
    );

    // Both commands are this crate at Cargo's version.
    for cmd in ["bench", "inference-bench"] {
        let out = ok(
            Command::new(bin.join(cmd))
                .arg("--version")
                .output()
                .expect("--version"),
            cmd,
        );
        assert_eq!(out.trim(), format!("bench {version}"), "{cmd} --version");
    }

    // A one-second benchmark against the simulator, from the venv's `bench`.
    let result = work.join("run.json");
    let o = Command::new(bin.join("bench"))
        .args(["run", "--mock", "--rate-type", "constant", "--rate", "5"])
        .args([
            "--max-seconds",
            "1",
            "--console",
            "none",
            "--quiet",
            "--output",
        ])
        .arg(&result)
        .current_dir(&work)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run bench");
    ok(o, "bench run --mock");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).expect("run.json"))
            .expect("a run report");
    assert_eq!(
        run["environment"]["tool_version"], version,
        "{}",
        run["environment"]
    );
    let completed = run["benchmarks"][0]["requests"]["completed"]
        .as_u64()
        .expect("completed");
    assert!(completed >= 1, "{}", run["benchmarks"][0]["requests"]);
    // The environment and the scratch links are a hundred MB: kept only when the test fails.
    let _ = std::fs::remove_dir_all(&work);
}

/// The venv's site-packages, for the tools' Python to read the installed metadata from.
fn venv_site(venv: &Path) -> PathBuf {
    let lib = venv.join("lib");
    std::fs::read_dir(&lib)
        .expect("venv lib")
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages"))
        .find(|p| p.is_dir())
        .expect("site-packages")
}
