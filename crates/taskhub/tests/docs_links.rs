//! The documentation holds together: every relative link in `README.md`, `bench/README.md` and
//! `docs/*.md` names a file that exists and, with an `#anchor`, a heading of that file (by
//! GitHub's slug); and the README's whole program is `examples/hello.rs`, word for word, so it
//! compiles and runs (the examples are built and run by the test command).
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The Markdown files whose links are checked.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md"), root.join("bench/README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The text outside fenced code blocks, line by line.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// GitHub's anchor for a heading: lower case, punctuation dropped (but `-` and `_`), spaces
/// as `-`; a repeated one gets `-1`, `-2`, ….
fn slugs(text: &str) -> BTreeSet<String> {
    let mut slugs = BTreeSet::new();
    for line in prose(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug: String = line[hashes..]
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut candidate = slug.clone();
        let mut n = 0;
        while !slugs.insert(candidate.clone()) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
    }
    slugs
}

/// The targets of `[text](target)` and `![alt](target)` links outside code blocks.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find([')', ' ']).unwrap_or(rest.len());
            targets.push(rest[..end].to_owned());
        }
    }
    targets
}

fn broken_links(root: &Path) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut broken = Vec::new();
    for page in pages(root) {
        let text = fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(root).unwrap().display().to_string();
        for target in link_targets(&text) {
            if target.contains(':') && !target.starts_with('#') {
                continue; // https:, mailto:
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !file.exists() {
                broken.push(format!("{name}: {target}: no such file"));
                continue;
            }
            if !anchor.is_empty() && file.extension().is_some_and(|ext| ext == "md") {
                let heading = slugs(&fs::read_to_string(&file).unwrap());
                if !heading.contains(anchor) {
                    broken.push(format!("{name}: {target}: no heading #{anchor}"));
                }
            }
        }
    }
    (checked, broken)
}

#[test]
fn every_relative_link_names_a_file_and_heading_that_exist() {
    let (checked, broken) = broken_links(&repo_root());
    assert!(
        checked >= 50,
        "only {checked} links found: is the parser right?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_program_is_the_hello_example() {
    let root = repo_root();
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let hello = fs::read_to_string(root.join("examples/hello.rs")).unwrap();
    let block = format!("```rust\n{}\n```", hello.trim_end());
    assert!(
        readme.contains(&block),
        "README.md's program must be examples/hello.rs as it is (copy the file into the block)"
    );
}

#[test]
fn the_checks_can_fail() {
    let text = "# Title\n## The `taskhub` binary\n## Title\n```\n# not a heading\n```\n";
    let slugs = slugs(text);
    assert_eq!(
        slugs.into_iter().collect::<Vec<_>>(),
        ["the-taskhub-binary", "title", "title-1"]
    );
    assert_eq!(
        link_targets("[a](b.md#c) ![d](e.png) [f](https://g)\n```\n[j](k)\n```"),
        ["b.md#c", "e.png", "https://g"]
    );
}
