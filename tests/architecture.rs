//! The module graph of both crates, read from their sources: no cycle between the modules of one
//! folder, and no arrow from a lower layer up to a higher one.
//!
//! An arrow is a `use` of, or a `crate::…`/`super::…`/`self::…`/`crumb_core::…` path to, another
//! module. Only code counts: comments, string literals and `mod tests { … }` blocks are blanked
//! first, so a doc link or a unit test's helper is not an arrow. An arrow between two modules is
//! lifted to the folder they meet in (`runtime::coordinator::x` → `runtime::session` is
//! `coordinator` → `session` in `runtime`), so a cycle through sub-folders is a cycle too.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// The core's layers, low → high: a module may use its own layer and the ones below.
const CORE_LAYERS: &[&[&str]] = &[
    &["vocab", "digest"],
    &["transcript"],
    &["pipeline"],
    &["engine"],
];

/// The `crumb` crate's layers, low → high (the core is below all of them).
const CRUMB_LAYERS: &[&[&str]] = &[
    &["exit_codes", "fs", "home", "process", "transcript"],
    &["adapters"],
    &["qa"],
    &["runtime"],
    &["batch", "export", "studio", "doctor", "mcp", "lsp"],
    &["cli"],
];

/// Modules of the core the `crumb` crate re-exports at its root (`src/lib.rs`), so that
/// `crate::pipeline::…` in the `crumb` crate is the core's `pipeline`.
const REEXPORTED_CORE: &[&str] = &["engine", "pipeline", "vocab"];

/// Arrows known to be wrong while a change that removes them is under way: (`from → to`, who).
/// Both ends are siblings of one folder (`folder::*`: from any of them). An entry that matches no
/// arrow any more fails the test, so it is deleted once fixed. Empty: every arrow points one way.
const ALLOWED: &[(&str, &str)] = &[];

/// A module: its crate's name, then the path below the crate root.
type ModuleId = Vec<String>;

/// Where an arrow was seen: `file:line` and the path written there.
type Evidence = String;

/// Arrows between modules, lifted to the folder their ends meet in.
#[derive(Default)]
struct Graph {
    /// folder → from-sibling → to-sibling → the first place the arrow was seen.
    siblings: BTreeMap<String, BTreeMap<String, BTreeMap<String, Evidence>>>,
}

impl Graph {
    /// Record the arrow `from` → `to` (ignored across crates and between a module and its own
    /// ancestor or descendant: those are not siblings).
    fn add(&mut self, from: &[String], to: &[String], evidence: &str) {
        let shared = from.iter().zip(to).take_while(|(a, b)| a == b).count();
        if shared == 0 || shared == from.len() || shared == to.len() {
            return;
        }
        self.siblings
            .entry(from[..shared].join("::"))
            .or_default()
            .entry(from[shared].clone())
            .or_default()
            .entry(to[shared].clone())
            .or_insert_with(|| evidence.to_owned());
    }

    /// Drop an arrow (`folder::a`, `folder::b`; `folder::*` for every sibling); whether one was
    /// there.
    fn remove(&mut self, from: &str, to: &str) -> bool {
        let (Some((folder, a)), Some((folder_to, b))) =
            (from.rsplit_once("::"), to.rsplit_once("::"))
        else {
            return false;
        };
        let Some(arrows) = self
            .siblings
            .get_mut(folder)
            .filter(|_| folder == folder_to)
        else {
            return false;
        };
        let mut removed = false;
        for (source, targets) in arrows.iter_mut() {
            if a == "*" || source == a {
                removed |= targets.remove(b).is_some();
            }
        }
        removed
    }

    /// Every cycle among the siblings of one folder, as `folder: a → b → a` with where each
    /// arrow was seen.
    fn cycles(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (folder, arrows) in &self.siblings {
            for component in strongly_connected(arrows) {
                let path = cycle_through(arrows, &component);
                let steps: Vec<String> = path
                    .windows(2)
                    .map(|w| format!("  {} → {}: {}", w[0], w[1], arrows[&w[0]][&w[1]]))
                    .collect();
                found.push(format!(
                    "{folder}: {}\n{}",
                    path.join(" → "),
                    steps.join("\n")
                ));
            }
        }
        found
    }

    /// Every arrow from a crate root's module to one in a higher layer (or to a module no layer
    /// names).
    fn layer_violations(&self, crate_name: &str, layers: &[&[&str]]) -> Vec<String> {
        let rank = |module: &str| layers.iter().position(|layer| layer.contains(&module));
        let mut found = Vec::new();
        for (from, targets) in self.siblings.get(crate_name).into_iter().flatten() {
            for (to, evidence) in targets {
                match (rank(from), rank(to)) {
                    (Some(low), Some(high)) if low < high => found.push(format!(
                        "{crate_name}: `{from}` (layer {low}) uses `{to}` (layer {high}): {evidence}"
                    )),
                    (Some(_), Some(_)) => {}
                    _ => found.push(format!(
                        "{crate_name}: `{from}` → `{to}`: name both in a layer of tests/architecture.rs"
                    )),
                }
            }
        }
        found
    }
}

/// The strongly connected components with more than one module (Tarjan's algorithm).
fn strongly_connected(arrows: &BTreeMap<String, BTreeMap<String, Evidence>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        arrows: &'a BTreeMap<String, BTreeMap<String, Evidence>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.arrows.get(node).into_iter().flat_map(BTreeMap::keys) {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next.as_str()]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next.as_str()) {
                    let low = self.low[node].min(self.index[next.as_str()]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        arrows,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in arrows.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.out
}

/// A shortest cycle through the first module of `component`, first module repeated at the end.
fn cycle_through(
    arrows: &BTreeMap<String, BTreeMap<String, Evidence>>,
    component: &[String],
) -> Vec<String> {
    let start = &component[0];
    let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for next in arrows.get(node).into_iter().flat_map(BTreeMap::keys) {
            if !component.contains(next) {
                continue;
            }
            if next == start {
                let mut path = vec![start.clone()];
                let mut at = node;
                while at != start {
                    path.push(at.clone());
                    at = came_from[at];
                }
                path.push(start.clone());
                path.reverse();
                return path;
            }
            if !came_from.contains_key(next) {
                came_from.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    component.to_vec()
}

/// One crate's sources: its name, its `src` folder.
struct CrateSources {
    name: &'static str,
    root: PathBuf,
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read source folder") {
            let path = entry.expect("folder entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The module a file is (`lib.rs` the root, `a/mod.rs` and `a.rs` both `a`); `None` for a
/// binary's `main.rs`, which is its own crate.
fn module_of(crate_name: &str, root: &Path, file: &Path) -> Option<ModuleId> {
    let relative = file.strip_prefix(root).ok()?.with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.last().map(String::as_str) {
        Some("main") if parts.len() == 1 => return None,
        Some("lib") if parts.len() == 1 => {
            parts.pop();
        }
        Some("mod") => {
            parts.pop();
        }
        _ => {}
    }
    parts.insert(0, crate_name.to_owned());
    Some(parts)
}

/// `source` with comments, string and char literals and `mod tests { … }` blocks replaced by
/// spaces (newlines kept, so line numbers still hold).
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in &mut out[from..to] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"//") {
            let end = memchr_from(bytes, i, b'\n');
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < bytes.len() && depth > 0 {
                if bytes[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if bytes[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(hashes) = raw_string_start(bytes, i) {
            let open = i + 2 + hashes;
            let close = [b"\"".as_slice(), &vec![b'#'; hashes]].concat();
            let end = find_from(bytes, open, &close).map_or(bytes.len(), |at| at + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(bytes.len());
            blank(&mut out, i, end);
            i = end;
        } else if bytes[i] == b'\'' {
            // A char literal (`'x'`, `'\n'`, `'\u{1F600}'`) rather than a lifetime.
            let end = if rest.get(1) == Some(&b'\\') {
                find_from(bytes, i + 2, b"'").map(|at| at + 1)
            } else {
                let width = source[i + 1..].chars().next().map_or(1, char::len_utf8);
                (bytes.get(i + 1 + width) == Some(&b'\'')).then_some(i + 2 + width)
            };
            let end = end.unwrap_or(i + 1);
            blank(&mut out, i, end);
            i = end;
        } else {
            i += 1;
        }
    }
    let mut code = String::from_utf8(out).expect("blanking keeps UTF-8 boundaries");
    while let Some(at) = find_word(&code, "mod tests", 0) {
        let Some(open) = code[at..].find('{').map(|o| at + o) else {
            break;
        };
        let end = matching_brace(code.as_bytes(), open);
        let blanked: String = code[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        code.replace_range(at..end, &blanked);
    }
    code
}

/// How many `#` a raw string opening at `i` has (`r"`, `r#"`, `br##"`), if one opens there.
fn raw_string_start(bytes: &[u8], i: usize) -> Option<usize> {
    let start = if bytes[i..].starts_with(b"br") {
        i + 2
    } else if bytes[i] == b'r' {
        i + 1
    } else {
        return None;
    };
    if i > 0 && is_ident(bytes[i - 1]) {
        return None;
    }
    let hashes = bytes[start..].iter().take_while(|b| **b == b'#').count();
    (bytes.get(start + hashes) == Some(&b'"')).then_some(hashes + start - i - 1)
}

fn memchr_from(bytes: &[u8], from: usize, needle: u8) -> usize {
    bytes[from..]
        .iter()
        .position(|b| *b == needle)
        .map_or(bytes.len(), |p| from + p)
}

fn find_from(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// The next `word` at `from` or after that is not part of a longer identifier.
fn find_word(text: &str, word: &str, from: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    while let Some(found) = text.get(at..)?.find(word) {
        let start = at + found;
        let end = start + word.len();
        let before_ok = start == 0 || !is_ident(bytes[start - 1]);
        let after_ok = end >= bytes.len() || !is_ident(bytes[end]);
        if before_ok && after_ok {
            return Some(start);
        }
        at = end;
    }
    None
}

/// The index just past the `}` matching the `{` at `open`.
fn matching_brace(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (i, byte) in bytes.iter().enumerate().skip(open) {
        match byte {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    bytes.len()
}

/// Every path `code` names with its line: each leaf of each `use` tree, then every
/// `crate::…`/`super::…`/`self::…`/`crumb_core::…` path elsewhere.
fn paths_in(code: &str) -> Vec<(usize, String)> {
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut rest = code.to_owned();
    let mut from = 0;
    while let Some(at) = find_word(&rest, "use", from) {
        let Some(end) = rest[at..].find(';').map(|e| at + e) else {
            break;
        };
        let tree = squeeze(&rest[at + 3..end]);
        for path in expand_use(&tree) {
            found.push((line_of(at), path));
        }
        let blanked: String = rest[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        rest.replace_range(at..end, &blanked);
        from = end;
    }
    for root in ["crate", "super", "self", "crumb_core"] {
        let mut from = 0;
        while let Some(at) = find_word(&rest, root, from) {
            let bytes = rest.as_bytes();
            let mut end = at + root.len();
            while bytes[end..].starts_with(b"::")
                && bytes.get(end + 2).is_some_and(|b| is_ident(*b))
            {
                end += 2;
                while end < bytes.len() && is_ident(bytes[end]) {
                    end += 1;
                }
            }
            if end > at + root.len() {
                found.push((line_of(at), rest[at..end].to_owned()));
            }
            from = end;
        }
    }
    found
}

/// A `use` tree on one line with no space except around `as`.
fn squeeze(tree: &str) -> String {
    let mut out = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    for (spaced, tight) in [
        (" ::", "::"),
        (":: ", "::"),
        (" {", "{"),
        ("{ ", "{"),
        (" }", "}"),
        ("} ", "}"),
        (" ,", ","),
        (", ", ","),
    ] {
        out = out.replace(spaced, tight);
    }
    out
}

/// The leaves of a `use` tree squeezed by [`squeeze`] (`a::{b,c::{self,D}}` → `a::b`, `a::c`,
/// `a::c::D`), renames and globs dropped.
fn expand_use(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        let path = path.trim_end_matches("::*").trim_end_matches("::self");
        return vec![path.to_owned()];
    };
    let prefix = &tree[..open];
    let close = matching_brace(tree.as_bytes(), open) - 1;
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, open + 1);
    for (i, c) in tree[open + 1..close].char_indices() {
        let i = open + 1 + i;
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..close]);
    parts
        .into_iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| expand_use(&format!("{prefix}{part}")))
        .map(|path| path.trim_end_matches("::").to_owned())
        .collect()
}

/// The module `path` (written in `module`) leads to: the longest known module it starts with.
fn resolve(path: &str, module: &ModuleId, known: &BTreeSet<ModuleId>) -> Option<ModuleId> {
    let mut segments = path.split("::");
    let mut target: ModuleId = match segments.next()? {
        "crate" => vec![module[0].clone()],
        "crumb_core" => vec!["crumb_core".to_owned()],
        "self" => module.clone(),
        "super" => {
            // `a/b.rs` and `a/b/mod.rs` are both `a::b`: `super` is `a` either way.
            let mut up = module.clone();
            up.pop();
            up
        }
        _ => return None,
    };
    for segment in segments {
        if segment == "super" {
            target.pop();
        } else {
            target.push(segment.to_owned());
        }
    }
    if target[0] == "crumb"
        && target
            .get(1)
            .is_some_and(|m| REEXPORTED_CORE.contains(&m.as_str()))
    {
        "crumb_core".clone_into(&mut target[0]);
    }
    (1..=target.len())
        .rev()
        .map(|n| target[..n].to_vec())
        .find(|prefix| known.contains(prefix))
}

/// The arrows of both crates' sources.
fn read_graph(crates: &[CrateSources]) -> Graph {
    let mut files = Vec::new();
    for krate in crates {
        for file in rust_files(&krate.root) {
            if let Some(module) = module_of(krate.name, &krate.root, &file) {
                files.push((file, module));
            }
        }
    }
    let known: BTreeSet<ModuleId> = files.iter().map(|(_, m)| m.clone()).collect();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut graph = Graph::default();
    for (file, module) in &files {
        let source = std::fs::read_to_string(file).expect("read source file");
        let shown = file
            .strip_prefix(workspace)
            .unwrap_or(file)
            .display()
            .to_string();
        for (line, path) in paths_in(&code_only(&source)) {
            if let Some(target) = resolve(&path, module, &known) {
                graph.add(module, &target, &format!("{shown}:{line} `{path}`"));
            }
        }
    }
    graph
}

#[test]
fn modules_form_no_cycle_and_no_layer_is_used_from_below() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut graph = read_graph(&[
        CrateSources {
            name: "crumb",
            root: workspace.join("src"),
        },
        CrateSources {
            name: "crumb_core",
            root: workspace.join("crates/crumb-core/src"),
        },
    ]);
    let stale: Vec<String> = ALLOWED
        .iter()
        .filter(|(arrow, _)| {
            let (from, to) = arrow.split_once(" → ").expect("an entry reads `from → to`");
            !graph.remove(from, to)
        })
        .map(|(arrow, who)| format!("{arrow} (allowed for {who}) is gone: delete its entry"))
        .collect();
    let mut problems = graph.cycles();
    problems.extend(graph.layer_violations("crumb_core", CORE_LAYERS));
    problems.extend(graph.layer_violations("crumb", CRUMB_LAYERS));
    problems.extend(stale);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_cycle_and_an_upward_arrow_are_reported() {
    let id = |path: &str| path.split("::").map(str::to_owned).collect::<ModuleId>();
    let mut graph = Graph::default();
    graph.add(&id("k::a::x"), &id("k::b"), "a.rs:1");
    graph.add(&id("k::b"), &id("k::c::y"), "b.rs:2");
    graph.add(&id("k::c"), &id("k::a"), "c.rs:3");
    graph.add(&id("k::a"), &id("k::a::x"), "own child: not a sibling");
    let cycles = graph.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].starts_with("k: a → b → c → a"), "{}", cycles[0]);
    let upward = graph.layer_violations("k", &[&["c"], &["a", "b"]]);
    assert_eq!(upward.len(), 1, "{upward:?}");
    assert!(
        upward[0].contains("`c` (layer 0) uses `a` (layer 1)"),
        "{upward:?}"
    );
    let unplaced = graph.layer_violations("k", &[&["a", "c"]]);
    assert_eq!(unplaced.len(), 2, "a → b and b → c: {unplaced:?}");
    assert!(unplaced[0].contains("name both in a layer"), "{unplaced:?}");
    assert!(graph.remove("k::*", "k::a"));
    assert!(graph.cycles().is_empty());
    assert!(!graph.remove("k::c", "k::a"), "already gone");
}

#[test]
fn paths_are_read_from_code_only() {
    let source = r#"
//! A doc link to [`crate::doc::only`].
use crate::a::{b, c::{self, D}, e as f};
use super::*;
fn g() -> &'static str { let _ = crate::h::i(); let _ = 'x'; "crate::in_string" }
#[cfg(test)]
mod tests { use crate::test_only; }
"#;
    let paths: Vec<String> = paths_in(&code_only(source))
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    assert_eq!(
        paths,
        [
            "crate::a::b",
            "crate::a::c",
            "crate::a::c::D",
            "crate::a::e",
            "super",
            "crate::h::i"
        ]
    );
}
