//! The worker's modules follow a message one way (issue 36): each folder under
//! `src/worker/` is a stage, and a stage imports only itself, the stages after it in
//! [`STAGES`] and the leaf `shared` (which imports no stage). Nothing imports the worker's
//! root (`worker/mod.rs`, which wires the stages), no path climbs with `super::super::`, and
//! no function under `worker/` is longer than [`MAX_FN_LINES`] lines.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

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

#[test]
fn worker_imports_follow_the_stages() {
    let found = layer_violations(&load(&worker_dir()));
    assert!(
        found.is_empty(),
        "imports against the worker's flow ({}):\n{}",
        STAGES.join(" → "),
        found.join("\n")
    );
}

#[test]
fn worker_functions_are_short() {
    let found = long_functions(&load(&worker_dir()));
    assert!(
        found.is_empty(),
        "functions over {MAX_FN_LINES} lines under worker/:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checks_can_fail() {
    let source = |rel: &str, text: &str| Source {
        rel: rel.to_owned(),
        text: text.to_owned(),
    };
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
