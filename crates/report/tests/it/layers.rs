//! The report crate's two layers (issue 34): `src/figures/` computes the figures, `src/views/`
//! renders them. Read from the source files by `bench_test_support::imports` (every `crate::`
//! and `super::` path names the module it reaches; the workspace-wide no-circle test is
//! there too); no
//! module under figures/ reaches one under views/, neither tree has a circle, the views'
//! shared helpers (`views/common.rs`) reach no other view, and nothing but the crate's `Error`
//! is taken through the crate root (which would hide the real module).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bench_test_support::imports::{find_cycle, graph, imports, name, ModPath};

fn under(m: &ModPath, tree: &str) -> bool {
    m.first().is_some_and(|f| f == tree)
}

/// Every violation of the layering rules in the source under `src`.
fn violations(src: &Path) -> Vec<String> {
    let (g, via_root) = graph(src);
    let mut out = Vec::new();
    for (m, edges) in &g {
        for t in edges {
            if under(m, "figures") && under(t, "views") {
                out.push(format!("figure {} imports view {}", name(m), name(t)));
            }
            if name(m) == "views::common" && under(t, "views") {
                out.push(format!("the views' helpers import view {}", name(t)));
            }
        }
    }
    for tree in ["figures", "views"] {
        if let Some(c) = find_cycle(&g, |m| under(m, tree)) {
            let c: Vec<String> = c.iter().map(name).collect();
            out.push(format!("a circle in {tree}/: {}", c.join(" -> ")));
        }
    }
    // The crate's `Error` may be taken through the root, nothing else.
    out.extend(via_root.into_iter().filter(|v| {
        (v.starts_with("figures") || v.starts_with("views")) && !v.ends_with("takes crate::Error")
    }));
    out
}

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn figures_never_import_views_and_neither_tree_has_a_circle() {
    let v = violations(&src());
    assert!(
        v.is_empty(),
        "the report's layers are broken:\n{}",
        v.join("\n")
    );
}

#[test]
fn the_graph_sees_both_trees_and_their_edges() {
    let (g, _) = graph(&src());
    let has = |from: &str, to: &str| {
        let f: ModPath = from.split("::").map(String::from).collect();
        let t: ModPath = to.split("::").map(String::from).collect();
        g.get(&f).is_some_and(|e| e.contains(&t))
    };
    assert!(g.keys().filter(|m| under(m, "figures")).count() >= 10);
    assert!(g.keys().filter(|m| under(m, "views")).count() >= 10);
    assert!(has("views::guidellm", "views::common"));
    assert!(has("views::vllm", "figures::model"));
    assert!(has("figures::stats", "figures::model"));
}

#[test]
fn the_parser_reads_grouped_nested_and_super_paths() {
    let known: BTreeSet<ModPath> = [
        vec![],
        vec!["views".to_string()],
        vec!["views".into(), "a".into()],
        vec!["views".into(), "b".into()],
        vec!["figures".into()],
        vec!["figures".into(), "m".into()],
        vec!["figures".into(), "n".into()],
    ]
    .into_iter()
    .collect();
    let me: ModPath = vec!["figures".into(), "m".into()];
    let text = "use crate::{figures::n::X, views::{a::Y, b}};\n\
                // use crate::views::a; (a comment)\n\
                mod tests { use super::*; }\n";
    let (edges, _) = imports(&me, text, &known);
    let want: BTreeSet<ModPath> = [
        vec!["figures".to_string(), "n".to_string()],
        vec!["views".into(), "a".into()],
        vec!["views".into(), "b".into()],
    ]
    .into_iter()
    .collect();
    assert_eq!(edges, want);
    let (edges, _) = imports(&me, "use super::n::Z;", &known);
    assert!(edges.contains(&vec!["figures".to_string(), "n".to_string()]));
    let (_, root) = imports(&me, "use crate::{Error, render_html};", &known);
    assert_eq!(root, vec!["Error".to_string(), "render_html".to_string()]);
}

/// A copy of the source with a view imported from a figure, and a circle planted among the
/// views, is refused with both named.
#[test]
fn a_planted_violation_fails() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("layers-plant");
    let _ = std::fs::remove_dir_all(&dir);
    copy_dir(&src(), &dir);
    let plant = |file: &str, line: &str| {
        let p = dir.join(file);
        let text = std::fs::read_to_string(&p).expect("read");
        std::fs::write(&p, format!("{line}\n{text}")).expect("write");
    };
    plant("figures/hist.rs", "use crate::views::common::esc;");
    plant(
        "views/common.rs",
        "use crate::views::{guidellm::render_guidellm};",
    );
    let v = violations(&dir);
    assert!(
        v.iter()
            .any(|l| l == "figure figures::hist imports view views::common"),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|l| l.starts_with("a circle in views/:") && l.contains("views::common")),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|l| l == "the views' helpers import view views::guidellm"),
        "{v:?}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let path = entry.expect("entry").path();
        let dest = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_dir(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).expect("copy");
        }
    }
}
