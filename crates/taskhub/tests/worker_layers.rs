//! The worker's modules follow a message one way (issue 36): each folder under
//! `src/worker/` is a stage, and a stage imports only itself, the stages after it in
//! [`STAGES`] and the leaf `shared` (which imports no stage). Nothing imports the worker's
//! root (`worker/mod.rs`, which wires the stages), no path climbs with `super::super::`, no
//! two files of a stage import each other (directly or in a longer circle), and no function
//! under `worker/` is longer than [`MAX_FN_LINES`] lines.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The stages in flow order: a module may import its own stage and those after it.
/// `root` is `worker/mod.rs` (the assembly: nothing may import it); `shared` is the leaf.
const STAGES: [&str; 7] = [
    "root",
    "intake",
    "entity",
    "orchestration",
    "activity",
    "lifecycle",
    "shared",
];

/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 80;

fn worker_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/worker")
}

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// A source file as the checks see it: its path under `worker/` and its text.
struct Source {
    rel: String,
    text: String,
}

/// A source file made up by a test of the checks.
fn source(rel: &str, text: &str) -> Source {
    Source {
        rel: rel.to_owned(),
        text: text.to_owned(),
    }
}

fn load(dir: &Path) -> Vec<Source> {
    sources(dir)
        .into_iter()
        .map(|path| Source {
            rel: path
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/"),
            text: fs::read_to_string(&path).unwrap(),
        })
        .collect()
}

/// The stage of a file: its first folder under `worker/` (`root` for files directly in it).
fn stage_of(rel: &str) -> &str {
    match rel.split_once('/') {
        Some((folder, _)) => folder,
        None => "root",
    }
}

fn rank(stage: &str) -> Option<usize> {
    STAGES.iter().position(|s| *s == stage)
}

/// The code of a line: without a `//` comment (doc comments included). Good enough for this
/// code base, whose strings hold no `//` before a path.
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |i| &line[..i])
}

/// The stages a line's code names: `crate::worker::<stage>`, and `super::` from a stage's
/// `mod.rs` (which names the root).
fn named_stages(rel: &str, line: &str) -> Vec<String> {
    let mut named = Vec::new();
    let mut rest = code(line);
    while let Some(i) = rest.find("crate::worker") {
        let after = &rest[i + "crate::worker".len()..];
        let stage = after
            .strip_prefix("::")
            .map(|a| {
                a.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .filter(|s| rank(s).is_some())
            .unwrap_or_else(|| "root".to_owned());
        named.push(stage);
        rest = after;
    }
    let is_stage_mod = rel.matches('/').count() == 1 && rel.ends_with("/mod.rs");
    if is_stage_mod && has_path_prefix(code(line), "super::") {
        named.push("root".to_owned());
    }
    named
}

/// True if `prefix` starts a path in `code` (not the tail of a longer path).
fn has_path_prefix(code: &str, prefix: &str) -> bool {
    code.match_indices(prefix).any(|(i, _)| {
        code[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'))
    })
}

/// The lines inside an inline `mod … {` block (tests): their `super::` names the file itself.
fn in_inline_module(text: &str) -> Vec<bool> {
    let mut inside = Vec::new();
    let mut depth = 0usize;
    let mut module_depth: Option<usize> = None;
    for line in text.lines() {
        let c = code(line);
        let opens_module = module_depth.is_none()
            && c.trim_start()
                .trim_start_matches("pub(crate) ")
                .starts_with("mod ")
            && c.trim_end().ends_with('{');
        if opens_module {
            module_depth = Some(depth);
        }
        inside.push(module_depth.is_some());
        for ch in c.chars() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if module_depth == Some(depth) {
                        module_depth = None;
                    }
                }
                _ => {}
            }
        }
    }
    inside
}

/// Every import against the flow, every `super::super::`, as `file:line: what`.
fn layer_violations(sources: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources {
        let stage = stage_of(&source.rel);
        let Some(own) = rank(stage) else {
            found.push(format!("{}: `{stage}` is not a stage", source.rel));
            continue;
        };
        let inline = in_inline_module(&source.text);
        for (n, line) in source.text.lines().enumerate() {
            if code(line).contains("super::super::") {
                found.push(format!("{}:{}: super::super::", source.rel, n + 1));
            }
            if inline[n] && !code(line).contains("crate::worker") {
                continue;
            }
            for target in named_stages(&source.rel, line) {
                let to = rank(&target).unwrap_or(0);
                if to < own || (target == "root" && own != 0) {
                    found.push(format!(
                        "{}:{}: `{stage}` imports `{target}`, which comes before it",
                        source.rel,
                        n + 1
                    ));
                }
            }
        }
    }
    found
}

/// A file's module name inside its stage: `mod` for the stage's `mod.rs`.
fn module_of(rel: &str) -> String {
    let file = rel.rsplit('/').next().unwrap_or(rel);
    file.trim_end_matches(".rs").to_owned()
}

/// The files loaded as a child of another by `#[path = "x.rs"] mod …;` (unit tests kept
/// apart): `super::` in them names that file, so they count as part of it.
fn path_children(sources: &[Source]) -> BTreeMap<String, String> {
    let mut children = BTreeMap::new();
    for source in sources {
        for line in source.text.lines() {
            let c = code(line).trim();
            if let Some(rest) = c.strip_prefix("#[path = \"") {
                let file = rest.split('"').next().unwrap_or_default();
                let dir = source.rel.rsplit_once('/').map_or("", |(d, _)| d);
                children.insert(format!("{dir}/{file}"), source.rel.clone());
            }
        }
    }
    children
}

/// A file's code as one text: comments, inline modules (tests) and, with `skip_reexports`,
/// `pub … use` lines (a re-export is no use) left out.
fn code_text(source: &Source, skip_reexports: bool) -> String {
    let inline = in_inline_module(&source.text);
    let mut out = String::new();
    let mut in_reexport = false;
    for (n, line) in source.text.lines().enumerate() {
        let c = code(line);
        if skip_reexports && c.trim_start().starts_with("pub") && c.contains(" use ") {
            in_reexport = true;
        }
        if !inline[n] && !in_reexport {
            out.push_str(c);
            out.push('\n');
        }
        if in_reexport && c.contains(';') {
            in_reexport = false;
        }
    }
    out
}

/// The first name of each item of a path's tail: `a::x` gives `a`, `{a, b::{c}}` gives `a`, `b`.
fn first_names(tail: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = tail.trim_start().strip_prefix('{') else {
        return vec![ident(tail)]
            .into_iter()
            .filter(|n| !n.is_empty())
            .collect();
    };
    let (mut names, mut depth, mut item) = (Vec::new(), 0usize, String::new());
    for ch in group.chars() {
        match ch {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => names.push(ident(&std::mem::take(&mut item))),
            _ => {}
        }
        if !(ch == ',' && depth == 0) {
            item.push(ch);
        }
    }
    names.push(ident(&item));
    names.retain(|n| !n.is_empty());
    names
}

/// The names a stage's `mod.rs` re-exports or imports, with the module each comes from
/// (`pub(crate) use redeliver::{abandon, …}` maps `abandon` to `redeliver`).
fn reexports(mod_rs: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    let text: String = mod_rs.lines().map(|l| format!("{}\n", code(l))).collect();
    for statement in text.split(';') {
        let statement = statement.trim();
        let statement = ["pub(crate) ", "pub "]
            .iter()
            .find_map(|p| statement.strip_prefix(p))
            .unwrap_or(statement);
        let Some(path) = statement.strip_prefix("use ") else {
            continue;
        };
        let Some((module, tail)) = path.trim().split_once("::") else {
            continue;
        };
        if !modules.contains(module) {
            continue;
        }
        for item in tail.trim_start_matches('{').split([',', '}']) {
            let name = item.rsplit(" as ").next().unwrap_or(item).trim();
            let name = name.rsplit("::").next().unwrap_or(name);
            if !name.is_empty() {
                names.insert(name.to_owned(), module.to_owned());
            }
        }
    }
    names
}

/// Where each path in `text` that starts with `prefix` leads among `modules` (a name only
/// re-exported by `mod.rs` leads to the module it comes from; any other to `mod`).
fn targets(
    text: &str,
    prefix: &str,
    modules: &BTreeSet<String>,
    names: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices(prefix) {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        for name in first_names(&text[i + prefix.len()..]) {
            let module = if modules.contains(&name) {
                name
            } else {
                names
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| "mod".to_owned())
            };
            found.insert(module);
        }
    }
    found
}

/// The imports between the files of each stage: stage → module → modules it uses.
type StageGraphs = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Every stage's import graph between its files (a `#[path]` child counts as its parent).
fn stage_graphs(sources: &[Source]) -> StageGraphs {
    let children = path_children(sources);
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for source in sources.iter().filter(|s| !children.contains_key(&s.rel)) {
        let stage = stage_of(&source.rel).to_owned();
        modules
            .entry(stage)
            .or_default()
            .insert(module_of(&source.rel));
    }
    let mut graphs = StageGraphs::new();
    for source in sources {
        let stage = stage_of(&source.rel);
        let Some(own) = modules.get(stage).filter(|_| stage != "root") else {
            continue;
        };
        let mod_rs = sources.iter().find(|s| s.rel == format!("{stage}/mod.rs"));
        let names = mod_rs.map(|m| reexports(&m.text, own)).unwrap_or_default();
        let owner = children.get(&source.rel).unwrap_or(&source.rel);
        let module = module_of(owner);
        let is_mod = module == "mod";
        let text = code_text(source, is_mod);
        let mut uses = targets(&text, &format!("crate::worker::{stage}::"), own, &names);
        if is_mod {
            // In `mod.rs` its child modules are named bare (`turn::run`).
            let named = own
                .iter()
                .filter(|c| has_path_prefix(&text, &format!("{c}::")));
            uses.extend(named.cloned());
        } else if !children.contains_key(&source.rel) {
            uses.extend(targets(&text, "super::", own, &names));
        }
        uses.remove(&module);
        let graph = graphs.entry(stage.to_owned()).or_default();
        graph.entry(module).or_default().extend(uses);
    }
    graphs
}

/// The shortest circle back to `start` through `graph`, if there is one.
fn circle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for next in graph.get(at).into_iter().flatten() {
            if next == start {
                let mut path = vec![at.to_owned()];
                let mut back = at;
                while let Some(prev) = came_from.get(back) {
                    path.push((*prev).to_owned());
                    back = prev;
                }
                path.reverse();
                path.push(start.to_owned());
                return Some(path);
            }
            if next != start && !came_from.contains_key(next.as_str()) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

/// Every circle of imports between the files of one stage, each named once, as
/// `stage: a.rs → b.rs → a.rs`.
fn import_cycles(sources: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for (stage, graph) in stage_graphs(sources) {
        let mut named: BTreeSet<BTreeSet<String>> = BTreeSet::new();
        for start in graph.keys() {
            let Some(circle) = circle_from(&graph, start) else {
                continue;
            };
            if named.insert(circle.iter().cloned().collect()) {
                let files: Vec<String> = circle.iter().map(|m| format!("{m}.rs")).collect();
                found.push(format!("{stage}: {}", files.join(" → ")));
            }
        }
    }
    found
}

/// True if `line` starts a function (`fn`, with any of `pub…`, `const`, `async`, `unsafe`).
fn starts_fn(line: &str) -> bool {
    let mut words = code(line).split_whitespace().peekable();
    while let Some(word) = words.next() {
        match word {
            "pub" | "const" | "async" | "unsafe" | "extern" => {}
            w if w.starts_with("pub(") => {}
            "fn" => return words.peek().is_some(),
            _ => return false,
        }
    }
    false
}

/// Counts braces in a line's code, skipping string and char literals.
fn brace_delta(line: &str) -> (usize, usize) {
    let (mut open, mut close) = (0, 0);
    let mut chars = code(line).chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            '"' => in_string = !in_string,
            '\'' if !in_string => {
                // A char literal ('{', '\'') is skipped; a lifetime ('a) is not a literal.
                let mut look = chars.clone();
                let first = look.next();
                let second = if first == Some('\\') {
                    look.next();
                    look.next()
                } else {
                    look.next()
                };
                if second == Some('\'') {
                    chars = look;
                }
            }
            '{' if !in_string => open += 1,
            '}' if !in_string => close += 1,
            _ => {}
        }
    }
    (open, close)
}

/// Every function longer than [`MAX_FN_LINES`], as `file:line: name (n lines)`.
fn long_functions(sources: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources {
        let lines: Vec<&str> = source.text.lines().collect();
        for (start, line) in lines.iter().enumerate() {
            if !starts_fn(line) {
                continue;
            }
            let mut depth = 0usize;
            let mut opened = false;
            let mut end = start;
            for (i, l) in lines.iter().enumerate().skip(start) {
                let (open, close) = brace_delta(l);
                if !opened && open == 0 && code(l).trim_end().ends_with(';') {
                    break; // a declaration without a body
                }
                depth += open;
                opened |= open > 0;
                depth = depth.saturating_sub(close);
                end = i;
                if opened && depth == 0 {
                    break;
                }
            }
            let length = end - start + 1;
            if length > MAX_FN_LINES {
                found.push(format!(
                    "{}:{}: {} ({length} lines)",
                    source.rel,
                    start + 1,
                    line.trim()
                ));
            }
        }
    }
    found
}

/// Runs `check` over the worker's sources and fails with what it found, under `what`.
fn assert_clean(check: fn(&[Source]) -> Vec<String>, what: &str) {
    let found = check(&load(&worker_dir()));
    assert!(found.is_empty(), "{what}:\n{}", found.join("\n"));
}

#[test]
fn worker_imports_follow_the_stages() {
    let flow = STAGES.join(" → ");
    assert_clean(
        layer_violations,
        &format!("imports against the worker's flow ({flow})"),
    );
}

#[test]
fn no_stage_imports_in_a_circle() {
    assert_clean(
        import_cycles,
        "files of one stage that import each other (directly or through others)",
    );
}

#[test]
fn worker_functions_are_short() {
    assert_clean(
        long_functions,
        &format!("functions over {MAX_FN_LINES} lines under worker/"),
    );
}

#[test]
fn the_checks_can_fail() {
    let long_body = "    let x = 1;\n".repeat(MAX_FN_LINES);
    let sources = [
        source(
            "shared/a.rs",
            "use crate::worker::intake::control;\n// crate::worker::intake in a comment\n",
        ),
        source("orchestration/b.rs", "use super::super::shared::Shared;\n"),
        source("activity/mod.rs", "use super::Shared;\n"),
        source("entity/c.rs", "use crate::worker::Shared;\n"),
        source(
            "intake/d.rs",
            "use crate::worker::shared::Shared;\nuse super::control;\n\
             #[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
        source("shared/e.rs", &format!("fn long() {{\n{long_body}}}\n")),
        source(
            "shared/f.rs",
            "pub(crate) async fn short() {\n    '{';\n}\n",
        ),
    ];
    let layers = layer_violations(&sources);
    assert_eq!(
        layers,
        [
            "shared/a.rs:1: `shared` imports `intake`, which comes before it",
            "orchestration/b.rs:1: super::super::",
            "activity/mod.rs:1: `activity` imports `root`, which comes before it",
            "entity/c.rs:1: `entity` imports `root`, which comes before it",
        ]
    );
    let long = long_functions(&sources);
    assert_eq!(long, ["shared/e.rs:1: fn long() { (82 lines)"]);
}

#[test]
fn the_cycle_check_names_each_circle() {
    let sources = [
        source(
            "orchestration/mod.rs",
            "mod a;\nmod b;\nmod c;\npub(crate) use c::helper;\n",
        ),
        source(
            "orchestration/a.rs",
            "use super::b::thing;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
        // `helper` is `c`'s (re-exported by mod.rs); `Item` is mod.rs's own.
        source("orchestration/b.rs", "use super::{helper, Item};\n"),
        source(
            "orchestration/c.rs",
            "fn f() {\n    crate::worker::orchestration::a::g();\n}\n\
             #[cfg(test)]\n#[path = \"c_tests.rs\"]\nmod tests;\n",
        ),
        // A `#[path]` child: its `super::` is `c.rs`, not the stage.
        source("orchestration/c_tests.rs", "use super::*;\n"),
        source("entity/mod.rs", "mod d;\nuse d::run;\n"),
        source("entity/d.rs", "use super::Shared;\n"),
        // Another stage's file of the same name is no circle.
        source("activity/mod.rs", "mod d;\n"),
        source("activity/d.rs", "use crate::worker::entity::d;\n"),
    ];
    assert_eq!(
        import_cycles(&sources),
        [
            "entity: d.rs → mod.rs → d.rs",
            "orchestration: a.rs → b.rs → c.rs → a.rs",
        ]
    );
}
