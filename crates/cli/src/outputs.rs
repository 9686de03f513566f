//! Report files: every `--output` path is checked before the run (a usage error, exit 2), and
//! each file is written on its own after every finished benchmark, so one bad path never stops
//! the others from being written. A failure is reported once per path, not after every
//! benchmark.

use std::path::{Path, PathBuf};

use bench_report::{OutputFormat, RunReport};

use crate::UsageError;

/// Checks that every path has a known format, is not a directory, and lies in an existing,
/// writable directory (by creating and removing a probe file there). Nothing is left behind.
pub fn check(paths: &[PathBuf]) -> Result<(), UsageError> {
    for p in paths {
        check_one(p).map_err(|why| UsageError::new(format!("--output {}: {why}", p.display())))?;
    }
    Ok(())
}

fn check_one(path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err("is a directory".into());
    }
    OutputFormat::from_path(path).map_err(|e| e.to_string())?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!("the directory {} does not exist", dir.display()));
    }
    let probe = dir.join(format!(".bench-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Writes the report to each path independently and remembers which paths failed.
#[derive(Debug, Default)]
pub struct Writer {
    paths: Vec<PathBuf>,
    failed: Vec<(PathBuf, String)>,
}

impl Writer {
    /// A writer for these paths.
    pub fn new(paths: Vec<PathBuf>) -> Self {
        Self {
            paths,
            failed: Vec::new(),
        }
    }

    /// Writes `run` to every path; a path that fails is logged the first time only, and the
    /// others are still written.
    pub fn write(&mut self, run: &RunReport) {
        for p in &self.paths {
            match bench_report::write_outputs(run, std::slice::from_ref(p)) {
                Ok(()) => self.failed.retain(|(f, _)| f != p),
                Err(e) => {
                    if !self.failed.iter().any(|(f, _)| f == p) {
                        tracing::error!("writing {} failed: {e}", p.display());
                        self.failed.push((p.clone(), e.to_string()));
                    }
                }
            }
        }
    }

    /// One line naming every path whose last write failed, `None` when all were written.
    pub fn failures(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        let list: Vec<String> = self.failed.iter().map(|(_, e)| e.clone()).collect();
        Some(list.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bench-outputs-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    #[test]
    fn bad_paths_are_refused_naming_the_path() {
        let d = tmp("check");
        assert!(check(&[d.join("ok.json"), d.join("ok.csv")]).is_ok());
        assert!(!d.join("ok.json").exists(), "the check writes nothing");
        for (bad, why) in [
            (d.join("missing/x.json"), "does not exist"),
            (d.join("x.txt"), "x.txt"),
            (d.clone(), "directory"),
        ] {
            let e = check(&[d.join("ok.csv"), bad.clone()]).expect_err("bad");
            assert!(e.to_string().contains(why), "{e}");
            assert!(e.to_string().contains(&bad.display().to_string()), "{e}");
        }
        let leftovers = std::fs::read_dir(&d).expect("dir").count();
        assert_eq!(leftovers, 0, "no probe file left behind");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn one_bad_path_never_stops_the_others() {
        let d = tmp("write");
        let gone = d.join("gone");
        std::fs::create_dir_all(&gone).expect("mkdir");
        let mut w = Writer::new(vec![gone.join("a.json"), d.join("b.csv"), d.join("c.json")]);
        std::fs::remove_dir(&gone).expect("rmdir");
        let run = RunReport::new("id", "2026-01-01T00:00:00Z");
        w.write(&run);
        w.write(&run);
        assert!(d.join("b.csv").exists() && d.join("c.json").exists());
        let f = w.failures().expect("one failure");
        assert!(f.contains("a.json"), "{f}");
        assert_eq!(w.failed.len(), 1, "reported once");
        let _ = std::fs::remove_dir_all(&d);
    }
}
