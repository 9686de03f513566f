//! The report crate's two layers (issue 34): `src/figures/` computes the figures, `src/views/`
//! renders them. Read from the source files: every `crate::` and `super::` path (grouped
//! `use crate::{a, b::{c, d}}` and nested modules included) names the module it reaches; no
//! module under figures/ reaches one under views/, neither tree has a circle, the views'
//! shared helpers (`views/common.rs`) reach no other view, and nothing but the crate's `Error`
//! is taken through the crate root (which would hide the real module).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path from the crate root, e.g. `["figures", "model"]`; the root is empty.
type ModPath = Vec<String>;

/// The modules of the crate: each source file's module path and its text.
fn modules(src: &Path) -> BTreeMap<ModPath, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("read source");
                out.insert(module_path(src, &path), text);
            }
        }
    }
    out
}

fn module_path(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: ModPath = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text without comments (doc links are not imports) and without string literals.
fn code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let line = match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        };
        let mut in_str = false;
        let mut prev = ' ';
        for c in line.chars() {
            if c == '"' && prev != '\\' && prev != '\'' {
                in_str = !in_str;
            } else if !in_str {
                out.push(c);
            }
            prev = c;
        }
        out.push('\n');
    }
    out
}

/// Splits `s` at top-level commas (outside braces).
fn split_top(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path `tail` (the text after `crate::` or `super::`) spells, expanding groups: `a::b`,
/// `{a, b::{c, d}}`, `a::{self, b}`. Each path is a list of segments.
fn expand(tail: &str) -> Vec<Vec<String>> {
    let tail = tail.trim_start();
    if let Some(rest) = tail.strip_prefix('{') {
        let mut depth = 1;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map_or(rest.len(), |(i, _)| i);
        return split_top(&rest[..end])
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .flat_map(expand)
            .collect();
    }
    let name: String = tail.chars().take_while(|&c| is_ident(c)).collect();
    if name.is_empty() || name == "self" {
        return vec![vec![]];
    }
    let after = &tail[name.len()..];
    match after.strip_prefix("::") {
        Some(more) => expand(more)
            .into_iter()
            .map(|mut p| {
                p.insert(0, name.clone());
                p
            })
            .collect(),
        None => vec![vec![name]],
    }
}

/// The inline-module depth (`mod tests { ... }`) at each byte of `code`.
fn inline_depths(code: &str) -> Vec<usize> {
    let mut depths = Vec::with_capacity(code.len());
    let (mut brace, mut stack, mut pending) = (0usize, Vec::new(), false);
    let bytes = code.as_bytes();
    for (i, c) in code.char_indices() {
        if c == '{' {
            brace += 1;
            if pending {
                stack.push(brace);
                pending = false;
            }
        } else if c == '}' {
            if stack.last() == Some(&brace) {
                stack.pop();
            }
            brace = brace.saturating_sub(1);
        } else if c == ';' {
            pending = false;
        } else if code[i..].starts_with("mod ") && (i == 0 || !is_ident(bytes[i - 1] as char)) {
            pending = true;
        }
        for _ in 0..c.len_utf8() {
            depths.push(stack.len());
        }
    }
    depths
}

/// The modules `module` (whose source is `text`) reaches, among `known`; and the names it
/// takes through the crate root.
fn imports(
    module: &ModPath,
    text: &str,
    known: &BTreeSet<ModPath>,
) -> (BTreeSet<ModPath>, Vec<String>) {
    let code = code(text);
    let depths = inline_depths(&code);
    let (mut out, mut via_root) = (BTreeSet::new(), Vec::new());
    for (i, _) in code.match_indices("::") {
        let head_start = code[..i].rfind(|c: char| !is_ident(c)).map_or(0, |j| j + 1);
        let head = &code[head_start..i];
        if head_start > 1 && &code.as_bytes()[head_start - 2..head_start] == b"::" {
            continue; // not the start of a path
        }
        let mut base: ModPath = match head {
            "crate" => vec![],
            "super" => {
                // `super` of an inline module is the file's module; of a file, its parent.
                let mut b = module.clone();
                if depths.get(i).copied().unwrap_or(0) > 1 {
                    // inside a module nested two deep: one level up is still in this file
                } else if depths.get(i).copied().unwrap_or(0) == 0 {
                    b.pop();
                }
                b
            }
            _ => continue,
        };
        let mut tail = &code[i + 2..];
        while let Some(rest) = tail.strip_prefix("super::") {
            base.pop();
            tail = rest;
        }
        for path in expand(tail) {
            let mut full = base.clone();
            full.extend(path);
            let target = (1..=full.len())
                .rev()
                .map(|n| full[..n].to_vec())
                .find(|p| known.contains(p));
            match target {
                Some(t) if &t != module => {
                    out.insert(t);
                }
                Some(_) => {}
                None if head == "crate" => {
                    if let Some(name) = full.first().filter(|n| n.as_str() != "Error") {
                        via_root.push(name.clone());
                    }
                }
                None => {}
            }
        }
    }
    (out, via_root)
}

fn under(m: &ModPath, tree: &str) -> bool {
    m.first().is_some_and(|f| f == tree)
}

fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// A circle among the modules of `tree`, as its modules in order, if there is one.
fn find_cycle(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>, tree: &str) -> Option<Vec<String>> {
    fn visit(
        m: &ModPath,
        graph: &BTreeMap<ModPath, BTreeSet<ModPath>>,
        tree: &str,
        state: &mut BTreeMap<ModPath, u8>,
        path: &mut Vec<ModPath>,
    ) -> Option<Vec<String>> {
        state.insert(m.clone(), 1);
        path.push(m.clone());
        for t in graph
            .get(m)
            .into_iter()
            .flatten()
            .filter(|t| under(t, tree))
        {
            match state.get(t).copied().unwrap_or(0) {
                1 => {
                    let from = path.iter().position(|p| p == t).unwrap_or(0);
                    let mut c: Vec<String> = path[from..].iter().map(name).collect();
                    c.push(name(t));
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(t, graph, tree, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(m.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys().filter(|m| under(m, tree)) {
        if state.get(m).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(m, graph, tree, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The import graph of the crate's source under `src`, and names taken through the root.
fn graph(src: &Path) -> (BTreeMap<ModPath, BTreeSet<ModPath>>, Vec<String>) {
    let mods = modules(src);
    let known: BTreeSet<ModPath> = mods.keys().cloned().collect();
    let mut g = BTreeMap::new();
    let mut via_root = Vec::new();
    for (m, text) in &mods {
        let (edges, root) = imports(m, text, &known);
        via_root.extend(
            root.into_iter()
                .map(|n| format!("{} takes crate::{n}", name(m))),
        );
        g.insert(m.clone(), edges);
    }
    (g, via_root)
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
        if let Some(c) = find_cycle(&g, tree) {
            out.push(format!("a circle in {tree}/: {}", c.join(" -> ")));
        }
    }
    out.extend(
        via_root
            .into_iter()
            .filter(|v| v.starts_with("figures") || v.starts_with("views")),
    );
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
    assert_eq!(root, vec!["render_html".to_string()]);
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
