//! The import graph of a crate's modules, read from its source files: every `crate::` and
//! `super::` path (grouped `use crate::{a, b::{c, d}}` and nested modules included) names the
//! module it reaches. The report's layering test and the workspace's no-circle test read it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;

/// A module's path from the crate root, e.g. `["figures", "model"]`; the root is empty.
pub type ModPath = Vec<String>;

/// The modules of the crate: each source file's module path and its text.
pub fn modules(src: &Path) -> BTreeMap<ModPath, String> {
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
pub fn expand(tail: &str) -> Vec<Vec<String>> {
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

/// Every path `module` (whose source is `text`) spells from `crate::` or `super::`, made
/// absolute (a list of segments from the crate root).
fn paths(module: &ModPath, text: &str) -> Vec<ModPath> {
    let code = code(text);
    let depths = inline_depths(&code);
    let mut out = Vec::new();
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
            out.push(full);
        }
    }
    out
}

/// The longest prefix of `full` that is a module of `known`.
fn module_of(full: &[String], known: &BTreeSet<ModPath>) -> Option<ModPath> {
    (1..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|p| known.contains(p))
}

/// The modules `module` (whose source is `text`) reaches, among `known`; and the names it
/// takes through the crate root (`crate::Name`, or `super::Name` from a top-level module).
pub fn imports(
    module: &ModPath,
    text: &str,
    known: &BTreeSet<ModPath>,
) -> (BTreeSet<ModPath>, Vec<String>) {
    let (mut out, mut via_root) = (BTreeSet::new(), Vec::new());
    for full in paths(module, text) {
        match module_of(&full, known) {
            Some(t) if &t != module => {
                out.insert(t);
            }
            Some(_) => {}
            None => via_root.extend(full.first().cloned()),
        }
    }
    (out, via_root)
}

/// A module's path as Rust spells it (`crate` for the root).
pub fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

/// The import graph of the crate's source under `src`, and names taken through the root.
pub fn graph(src: &Path) -> (BTreeMap<ModPath, BTreeSet<ModPath>>, Vec<String>) {
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

/// A circle in `graph` among the modules `keep` accepts, as its modules in order, if there is
/// one.
pub fn find_cycle<T: Ord + Clone>(
    graph: &BTreeMap<T, BTreeSet<T>>,
    keep: impl Fn(&T) -> bool,
) -> Option<Vec<T>> {
    fn visit<T: Ord + Clone>(
        m: &T,
        graph: &BTreeMap<T, BTreeSet<T>>,
        keep: &dyn Fn(&T) -> bool,
        state: &mut BTreeMap<T, u8>,
        path: &mut Vec<T>,
    ) -> Option<Vec<T>> {
        state.insert(m.clone(), 1);
        path.push(m.clone());
        for t in graph.get(m).into_iter().flatten().filter(|t| keep(t)) {
            match state.get(t).copied().unwrap_or(0) {
                1 => {
                    let from = path.iter().position(|p| p == t).unwrap_or(0);
                    let mut c: Vec<T> = path[from..].to_vec();
                    c.push(t.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(t, graph, keep, state, path) {
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
    for m in graph.keys().filter(|m| keep(m)) {
        if state.get(m).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(m, graph, &keep, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// A test-only file module: its name, or the file its `#[path]` names.
enum TestFile {
    Named(String),
    Path(String),
}

/// `text` without its test-only code (`#[cfg(test)]` inline modules and `use` items), and the
/// file modules it declares under `#[cfg(test)]`.
fn strip_tests(text: &str) -> (String, Vec<TestFile>) {
    let code = code(text);
    // `#[path]` values, read from the text itself (the code lost its string literals).
    let mut paths = text.split("#[cfg(test)]").skip(1).map(|after| {
        let after = after.trim_start();
        let p = after.strip_prefix("#[path = \"")?;
        Some(p[..p.find('"')?].to_string())
    });
    let (mut out, mut test_files) = (String::new(), Vec::new());
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let mut after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let mut path = None;
        // Other attributes of the item: `#[path = "file.rs"]` names its file.
        let named = paths.next().flatten();
        while let Some(attr) = after.strip_prefix("#[") {
            let end = attr.find(']').unwrap_or(attr.len());
            if attr[..end].trim().starts_with("path") {
                path = named.clone();
            }
            after = attr[(end + 1).min(attr.len())..].trim_start();
        }
        let item = after.strip_prefix("pub ").unwrap_or(after);
        if let Some(m) = item.strip_prefix("mod ") {
            let name: String = m
                .trim_start()
                .chars()
                .take_while(|&c| is_ident(c))
                .collect();
            let file = match path.take() {
                Some(p) => TestFile::Path(p),
                None => TestFile::Named(name),
            };
            let brace = m.find('{');
            let semi = m.find(';');
            match (brace, semi) {
                (Some(b), Some(sc)) if sc < b => {
                    test_files.push(file);
                    rest = &m[sc + 1..];
                }
                (Some(b), _) => rest = skip_block(&m[b..]),
                (None, Some(sc)) => {
                    test_files.push(file);
                    rest = &m[sc + 1..];
                }
                (None, None) => rest = "",
            }
        } else if item.starts_with("use ") {
            rest = item.find(';').map_or("", |sc| &item[sc + 1..]);
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    (out, test_files)
}

/// What follows the block `s` starts with (`{ ... }`, braces matched).
fn skip_block(s: &str) -> &str {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &s[i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

/// The names a folder module's `use` items bring in from its children (`pub use a::{B, C};`
/// in `mod.rs` or `lib.rs`), each with the child it comes from; `folder` is the folder's path,
/// `children` its child modules' names.
fn reexports(
    folder: &ModPath,
    text: &str,
    children: &BTreeSet<String>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for part in text.split("use ").skip(1) {
        let Some(end) = part.find(';') else { continue };
        let body = part[..end].trim();
        let rel: Vec<Vec<String>> = if let Some(abs) = body.strip_prefix("crate::") {
            expand(abs)
                .into_iter()
                .filter(|p| p.starts_with(folder))
                .map(|p| p[folder.len()..].to_vec())
                .collect()
        } else {
            expand(body.strip_prefix("self::").unwrap_or(body))
        };
        for path in rel {
            if let (Some(first), Some(last)) = (path.first(), path.last()) {
                if children.contains(first) && path.len() > 1 {
                    out.insert(last.clone(), first.clone());
                }
            }
        }
    }
    out
}

/// The graph among the children of the folder module `folder` (the crate root: `[]`): each
/// child's name and the children it reaches by any of its modules, test-only code left out;
/// a name taken through the folder (`crate::Name`, `super::Name`) counts as an import of the
/// child the folder takes it from.
pub fn level(src: &Path, folder: &ModPath) -> BTreeMap<String, BTreeSet<String>> {
    let (known, stripped) = code_modules(src);
    let children: BTreeSet<String> = known
        .iter()
        .filter(|m| m.len() > folder.len() && m.starts_with(folder))
        .map(|m| m[folder.len()].clone())
        .collect();
    let through = reexports(
        folder,
        stripped.get(folder).map_or("", String::as_str),
        &children,
    );
    let mut g: BTreeMap<String, BTreeSet<String>> = children
        .iter()
        .map(|c| (c.clone(), BTreeSet::new()))
        .collect();
    for m in known
        .iter()
        .filter(|m| m.len() > folder.len() && m.starts_with(folder))
    {
        let from = &m[folder.len()];
        for full in paths(m, &stripped[m]) {
            let to = match module_of(&full, &known) {
                Some(t) if t.len() > folder.len() && t.starts_with(folder) => {
                    Some(t[folder.len()].clone())
                }
                Some(t) if &t == folder => {
                    full.get(folder.len()).and_then(|n| through.get(n)).cloned()
                }
                None if folder.is_empty() => full.first().and_then(|n| through.get(n)).cloned(),
                _ => None,
            };
            if let Some(to) = to.filter(|t| t != from) {
                g.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    g
}

/// The crate's modules that are not test-only, and each module's code without its test-only
/// parts.
fn code_modules(src: &Path) -> (BTreeSet<ModPath>, BTreeMap<ModPath, String>) {
    let mut stripped = BTreeMap::new();
    let mut test_only: Vec<ModPath> = Vec::new();
    for (m, text) in modules(src) {
        let (code, files) = strip_tests(&text);
        test_only.extend(files.into_iter().map(|f| match f {
            TestFile::Named(name) => {
                let mut p = m.clone();
                p.push(name);
                p
            }
            // A path beside the declaring file.
            TestFile::Path(file) => {
                let mut p = m.clone();
                p.pop();
                p.push(file.trim_end_matches(".rs").to_string());
                p
            }
        }));
        stripped.insert(m, code);
    }
    let known: BTreeSet<ModPath> = stripped
        .keys()
        .filter(|m| !test_only.iter().any(|t| m.starts_with(t)))
        .cloned()
        .collect();
    stripped.retain(|m, _| known.contains(m));
    (known, stripped)
}

/// Every circle among the children of a folder module of the crate under `src` (the crate
/// root's top-level modules first), as `folder: a -> b -> a`.
pub fn circles(src: &Path) -> Vec<String> {
    let (known, _) = code_modules(src);
    let folders: BTreeSet<ModPath> = known
        .iter()
        .filter(|m| {
            known
                .iter()
                .any(|c| c.len() == m.len() + 1 && c.starts_with(m))
        })
        .cloned()
        .collect();
    folders
        .iter()
        .filter_map(|f| {
            let c = find_cycle(&level(src, f), |_| true)?;
            Some(format!("{}: {}", name(f), c.join(" -> ")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crates() -> Vec<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("crates/")
            .filter_map(Result::ok)
            .map(|e| e.path().join("src"))
            .filter(|p| p.is_dir())
            .collect();
        v.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src"));
        v.sort();
        v
    }

    /// Every crate's top-level modules, and the modules of each folder, form a one-way graph
    /// (test-only modules aside): a module that imports a sibling is above it, never below it
    /// too.
    #[test]
    fn no_crate_has_an_import_circle_among_its_top_level_modules() {
        let all = crates();
        assert!(all.len() >= 12, "{all:?}");
        let circles: Vec<String> = all
            .iter()
            .flat_map(|src| {
                circles(src)
                    .into_iter()
                    .map(move |c| format!("{}: {c}", src.display()))
            })
            .collect();
        assert!(
            circles.is_empty(),
            "import circles:\n{}",
            circles.join("\n")
        );
    }

    fn write(dir: &Path, file: &str, text: &str) {
        let p = dir.join(file);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    /// A planted circle is found, through a folder, a grouped import and a name the root
    /// re-exports; test-only code is not an import.
    #[test]
    fn a_planted_circle_is_found_and_test_code_is_not_an_import() {
        let dir = std::env::temp_dir().join(format!("bench-imports-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write(
            &dir,
            "lib.rs",
            "mod a;\nmod b;\nmod c;\n#[cfg(test)]\nmod t;\npub use c::Thing;\n",
        );
        write(&dir, "a.rs", "use crate::{b::X, c};\n#[cfg(test)]\nmod tests { use crate::t::Y; }\n#[cfg(test)]\n#[path = \"pt.rs\"]\nmod pt;\n");
        write(&dir, "pt.rs", "use crate::a::Z;\n");
        write(&dir, "b/mod.rs", "mod inner;\n");
        write(&dir, "b/inner.rs", "use crate::Thing;\n");
        write(&dir, "c.rs", "pub struct Thing;\n");
        write(&dir, "t.rs", "use crate::a::Z;\n");
        let g = level(&dir, &Vec::new());
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(g["a"], set(&["b", "c"]));
        assert_eq!(g["b"], set(&["c"]), "through the root's re-export");
        assert!(!g.contains_key("t"), "a test-only file is no module: {g:?}");
        assert!(!g.contains_key("pt"), "nor one named by #[path]: {g:?}");
        assert_eq!(circles(&dir), Vec::<String>::new());
        write(&dir, "c.rs", "pub struct Thing;\nuse super::a::W;\n");
        assert_eq!(circles(&dir), ["crate: a -> b -> c -> a"]);
        // A circle inside a folder, through the folder's re-export.
        write(&dir, "c.rs", "pub struct Thing;\n");
        write(
            &dir,
            "b/mod.rs",
            "mod inner;\nmod other;\npub use other::O;\n",
        );
        write(&dir, "b/other.rs", "use super::inner::I;\n");
        write(&dir, "b/inner.rs", "use super::O;\n");
        assert_eq!(circles(&dir), ["b: inner -> other -> inner"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
