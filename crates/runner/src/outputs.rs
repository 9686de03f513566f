//! Report files: every `--output` path is checked before the run (a usage error, exit 2), and
//! each file is written on its own after every finished benchmark, so one bad path never stops
//! the others from being written. A failure is reported once per path, not after every
//! benchmark.
//!
//! With no file named (and none turned off), the run's JSON is kept anyway: a new file under
//! [`DEFAULT_DIR`], claimed before the run ([`reserve`]) so that no other run, even one
//! started the same second, can take its name, and written by the same [`Writer`].

use std::path::{Path, PathBuf};
use std::time::SystemTime;

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

/// Where a run's JSON goes when no `--output` names a file: `bench-results/` in the current
/// directory.
pub const DEFAULT_DIR: &str = "bench-results";

/// The default file's name for a run of `kind` (the rate type, `sweep` for a sweep) started
/// at `at`: `<UTC time>-<kind>.json`, the time in ISO 8601's basic form
/// (`20261127T203706Z`), so that names sort in time order and hold no `:`; `n` > 1 (a
/// second run the same second) adds `-n`.
fn default_name(at: SystemTime, kind: &str, n: u32) -> String {
    let t = time::OffsetDateTime::from(at);
    let stamp = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let kind: String = kind
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    match n {
        1 => format!("{stamp}-{kind}.json"),
        n => format!("{stamp}-{kind}-{n}.json"),
    }
}

/// A default file claimed for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reserved {
    /// The file, created empty.
    pub path: PathBuf,
    /// Its directory did not exist before: removed again when the run leaves nothing in it.
    made_dir: bool,
}

/// Claims a new default file in `dir` (created if missing) for a run of `kind` started at
/// `at`: created empty with `create_new`, so an earlier run's file is never replaced and two
/// runs never share a name; the writer then replaces it after every benchmark. A directory
/// that cannot be made or written is a usage error naming it (the run has not started).
pub fn reserve(dir: &Path, kind: &str, at: SystemTime) -> Result<Reserved, UsageError> {
    let refuse = |what: &Path, e: std::io::Error| {
        UsageError::new(format!(
            "cannot keep the run's result in {}: {e}; name a file with --output, or run with --no-output",
            what.display()
        ))
    };
    let made_dir = !dir.is_dir();
    let mut n = 1;
    let mut remade = 0;
    while n <= 1000 {
        std::fs::create_dir_all(dir).map_err(|e| refuse(dir, e))?;
        let path = dir.join(default_name(at, kind, n));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => return Ok(Reserved { path, made_dir }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            // Another run removed the directory it had made as this one claimed its name:
            // made again, and the same name tried again.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && remade < 3 => remade += 1,
            Err(e) => return Err(refuse(&path, e)),
        }
    }
    Err(UsageError::new(format!(
        "cannot keep the run's result in {}: 1000 runs this second already have their file; name a file with --output",
        dir.display()
    )))
}

/// After the run: a claimed default file no benchmark was written to (the run failed before
/// its first one ended) is removed, with the directory when the claim made it and it is now
/// empty, so a failed start leaves nothing behind. Returns whether the file holds the run.
pub fn settle_default(r: &Reserved) -> bool {
    match std::fs::metadata(&r.path) {
        Ok(m) if m.len() > 0 => true,
        Ok(_) => {
            let _ = std::fs::remove_file(&r.path);
            if r.made_dir {
                if let Some(dir) = r.path.parent() {
                    // Fails, as it should, when another run's file is in it.
                    let _ = std::fs::remove_dir(dir);
                }
            }
            false
        }
        Err(_) => false,
    }
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
    fn the_default_file_is_new_every_time_and_named_by_time_and_kind() {
        let d = tmp("default");
        let _ = std::fs::remove_dir_all(&d);
        let at = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_811_826);
        let dir = d.join(DEFAULT_DIR);
        let a = reserve(&dir, "sweep", at).expect("first");
        assert_eq!(a.path, dir.join("20261127T203706Z-sweep.json"));
        assert!(a.made_dir);
        std::fs::write(&a.path, b"{}").expect("earlier run");
        // The same second, the same kind: a new name; the earlier file is untouched.
        let b = reserve(&dir, "sweep", at).expect("second");
        assert_eq!(b.path, dir.join("20261127T203706Z-sweep-2.json"));
        assert_eq!(std::fs::read(&a.path).expect("a"), b"{}");
        // Nothing written to it: removed after the run; written: kept.
        assert!(!settle_default(&b) && !b.path.exists());
        assert!(settle_default(&a) && a.path.exists());
        // A run that wrote nothing leaves no directory it made.
        std::fs::remove_file(&a.path).expect("rm");
        std::fs::remove_dir(&dir).expect("rmdir");
        let c = reserve(&dir, "constant", at).expect("third");
        assert!(!settle_default(&c) && !dir.exists());
        // A directory that cannot be made is a usage error naming it.
        std::fs::write(d.join("file"), b"").expect("file");
        let e = reserve(&d.join("file/sub"), "constant", at).expect_err("not a directory");
        assert!(
            e.to_string().contains("file/sub") && e.to_string().contains("--no-output"),
            "{e}"
        );
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
