//! Guards of this crate's layout (issue #34): the run's parts under `src/run/` stay short and
//! say their job, and `bench merge` and `bench report` do not import each other.

use std::path::{Path, PathBuf};

/// Most lines in a file of `src/run/`.
const MAX_FILE_LINES: usize = 400;
/// Most lines in one function of `src/run/`, signature and closing brace included.
const MAX_FN_LINES: usize = 80;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The functions of `text` longer than `max` lines, as `name (lines)`: from the `fn` line to
/// the `}` at the same indentation.
fn long_functions(text: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let Some(name) = ["pub(super) ", "pub(crate) ", "pub ", ""]
            .iter()
            .flat_map(|vis| ["async fn ", "fn "].map(|f| format!("{vis}{f}")))
            .find_map(|head| body.strip_prefix(head.as_str()))
        else {
            continue;
        };
        let close = format!("{indent}}}");
        let end = lines[i..].iter().position(|l| *l == close);
        let n = end.map_or(lines.len() - i, |e| e + 1);
        if n > max {
            let name: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            long.push(format!("{name} ({n} lines)"));
        }
    }
    long
}

/// Whether `text` names module `module` outside comments.
fn imports(text: &str, module: &str) -> bool {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .any(|l| l.contains(module))
}

#[test]
fn the_run_parts_are_short_and_say_their_job() {
    let dir = src().join("run");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("src/run/")
        .map(|e| e.expect("an entry of src/run/").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "src/run/ has its parts: {files:?}");
    let mut faults = Vec::new();
    for f in &files {
        let text = read(f);
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        let n = text.lines().count();
        if n > MAX_FILE_LINES {
            faults.push(format!("{name}: {n} lines (most {MAX_FILE_LINES})"));
        }
        if !text.starts_with("//!") {
            faults.push(format!(
                "{name}: does not begin with a //! line saying its job"
            ));
        }
        for long in long_functions(&text, MAX_FN_LINES) {
            faults.push(format!("{name}: {long} (most {MAX_FN_LINES})"));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn merge_and_report_do_not_import_each_other() {
    let merge = read(&src().join("merge_cmd.rs"));
    let report = read(&src().join("report_cmd.rs"));
    assert!(
        !imports(&merge, "report_cmd"),
        "merge_cmd.rs imports report_cmd"
    );
    assert!(
        !imports(&report, "merge_cmd"),
        "report_cmd.rs imports merge_cmd"
    );
}

#[test]
fn the_guards_catch_what_they_guard() {
    let short = "fn a() {\n    x();\n}\n";
    assert!(long_functions(short, 3).is_empty());
    assert_eq!(long_functions(short, 2), ["a (3 lines)"]);
    let nested =
        "impl X {\n    pub(super) async fn b(&self) {\n        if y {\n        }\n    }\n}\n";
    assert_eq!(long_functions(nested, 3), ["b (4 lines)"]);
    assert!(imports("use crate::report_cmd::emit;", "report_cmd"));
    assert!(!imports("// like report_cmd does", "report_cmd"));
}
