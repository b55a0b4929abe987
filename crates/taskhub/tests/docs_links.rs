//! The documentation holds together: every relative link in `README.md`, `bench/README.md` and
//! `docs/*.md` names a file that exists and, with an `#anchor`, a heading of that file (by
//! GitHub's slug); and the README's whole program is `examples/hello.rs`, word for word, so it
//! compiles and runs (the examples are built and run by the test command). Every "DESIGN §N" or
//! "§N.M" cited in `crates/**/*.rs`, `docs/*.md` or `README.md` is a section of `docs/DESIGN.md`,
//! and every "invariant N" cited there is one it defines (its section 4.N). ARCHITECTURE.md's
//! layer diagram and crate map name every crate under `crates/`.
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

/// The `.rs` files under `dir`, at any depth.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The files whose citations of the design contract are checked.
fn citing_files(root: &Path) -> Vec<PathBuf> {
    let mut files = pages(root);
    rust_files(&root.join("crates"), &mut files);
    files
}

/// The number at the start of `text` (ASCII digits), and the rest.
fn number(text: &str) -> Option<(u32, &str)> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let n = text[..digits].parse().ok()?;
    Some((n, &text[digits..]))
}

/// The section number `N` or `N.M` at the start of `text`, as written (`"4"`, `"4.4"`).
fn section_number(text: &str) -> Option<String> {
    let (major, after) = number(text)?;
    Some(match after.strip_prefix('.').and_then(number) {
        Some((minor, _)) => format!("{major}.{minor}"),
        None => major.to_string(),
    })
}

/// The sections cited as `DESIGN §N` or `DESIGN §N.M`.
fn cited_sections(text: &str) -> Vec<String> {
    text.match_indices("DESIGN §")
        .filter_map(|(at, _)| section_number(&text[at + "DESIGN §".len()..]))
        .collect()
}

/// The invariants cited by number: "invariant 5", "invariants 1–3" (each in the range),
/// "invariants 1 and 7", "invariants 1, 2 or 3"; any case.
fn cited_invariants(text: &str) -> Vec<u32> {
    let lower = text.to_lowercase();
    let mut cited = Vec::new();
    for (at, _) in lower.match_indices("invariant") {
        let rest = &lower[at + "invariant".len()..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        let Some(mut rest) = rest.strip_prefix(' ') else {
            continue;
        };
        let mut range_from: Option<u32> = None;
        while let Some((n, after)) = number(rest) {
            cited.extend(range_from.map_or(n, |from| from + 1)..=n);
            let range = ["–", "-"].iter().find_map(|sep| after.strip_prefix(sep));
            let list = [", ", " and ", " or "]
                .iter()
                .find_map(|sep| after.strip_prefix(sep));
            (range_from, rest) = match (range, list) {
                (Some(next), _) => (Some(n), next),
                (None, Some(next)) => (None, next),
                (None, None) => break,
            };
        }
    }
    cited
}

/// The sections `docs/DESIGN.md` defines: `## N.` headings and `### N.M` headings.
fn design_sections(design: &str) -> BTreeSet<String> {
    prose(design)
        .into_iter()
        .filter_map(|line| line.strip_prefix("## ").or(line.strip_prefix("### ")))
        .filter_map(section_number)
        .collect()
}

/// The invariants `docs/DESIGN.md` defines: its sections 4.N.
fn design_invariants(sections: &BTreeSet<String>) -> BTreeSet<u32> {
    sections
        .iter()
        .filter_map(|s| s.strip_prefix("4.")?.parse().ok())
        .collect()
}

/// Citations that name a section or invariant `docs/DESIGN.md` does not define.
fn unresolved_citations(root: &Path) -> (usize, Vec<String>) {
    let sections = design_sections(&fs::read_to_string(root.join("docs/DESIGN.md")).unwrap());
    let invariants = design_invariants(&sections);
    let mut checked = 0;
    let mut unresolved = Vec::new();
    for file in citing_files(root) {
        let text = fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(root).unwrap().display().to_string();
        for section in cited_sections(&text) {
            checked += 1;
            if !sections.contains(&section) {
                unresolved.push(format!("{name}: DESIGN §{section}: no such section"));
            }
        }
        for invariant in cited_invariants(&text) {
            checked += 1;
            if !invariants.contains(&invariant) {
                unresolved.push(format!(
                    "{name}: invariant {invariant}: not in docs/DESIGN.md"
                ));
            }
        }
    }
    (checked, unresolved)
}

#[test]
fn every_design_section_and_invariant_cited_is_in_design_md() {
    let (checked, unresolved) = unresolved_citations(&repo_root());
    assert!(
        checked >= 30,
        "only {checked} citations found: is the parser right?"
    );
    assert!(
        unresolved.is_empty(),
        "citations docs/DESIGN.md does not resolve:\n{}",
        unresolved.join("\n")
    );
}

/// The crates under `crates/`, by directory name.
fn crate_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("Cargo.toml").exists())
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The crates ARCHITECTURE.md leaves out of its layer diagram (the first code block) or its
/// crate map (a table row starting with the crate's name).
fn crates_missing_from_architecture(architecture: &str, names: &[String]) -> Vec<String> {
    let diagram: String = architecture
        .split("```")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let in_diagram = |name: &str| {
        diagram
            .split(|c: char| !(c.is_alphanumeric() || c == '-'))
            .any(|word| word == name)
    };
    let mut missing = Vec::new();
    for name in names {
        if !in_diagram(name) {
            missing.push(format!("{name}: not in the layer diagram"));
        }
        if !architecture.contains(&format!("\n| `{name}` |")) {
            missing.push(format!("{name}: no row in the crate map"));
        }
    }
    missing
}

#[test]
fn architecture_names_every_crate() {
    let root = repo_root();
    let names = crate_names(&root);
    assert!(names.len() >= 10, "{names:?}");
    let architecture = fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let missing = crates_missing_from_architecture(&architecture, &names);
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md:\n{}",
        missing.join("\n")
    );
    let names = ["taskhub-x".to_owned()];
    let page = "```\n  taskhub-xy\n```\n| `taskhub-xy` |";
    assert_eq!(crates_missing_from_architecture(page, &names).len(), 2);
}

#[test]
fn the_design_checks_can_fail() {
    let design =
        "# D\n## 1. One\n## 4. Invariants\n### 4.1 First\n### 4.3 Third\n```\n## 9. Code\n```\n";
    let sections = design_sections(design);
    assert_eq!(
        sections.iter().map(String::as_str).collect::<Vec<_>>(),
        ["1", "4", "4.1", "4.3"]
    );
    assert_eq!(design_invariants(&sections), BTreeSet::from([1, 3]));
    // Built with concat! so that this file cites nothing itself.
    let text = concat!("(DESIGN ", "§4.4), DESIGN ", "§6. and DESIGN ", "§x");
    assert_eq!(cited_sections(text), ["4.4", "6"]);
    let text = concat!(
        "Invariant",
        " 7; invariants",
        " 1–3; invariants",
        " 2 and 5, ",
        "invariants",
        " 1, 2 or 6. An invariant is"
    );
    assert_eq!(cited_invariants(text), [7, 1, 2, 3, 2, 5, 1, 2, 6]);
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
