//! `docs/BACKENDS.md` walks a new backend step by step, and is true: every backend listed in
//! `BACKENDS` has what the walk's checked steps (✔) say, and the test fails naming the
//! backend and each step it misses.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use std::path::{Path, PathBuf};

use taskhub_backends::testing::{test_hubs, TestHub};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Where a backend's code is, from its plug-in's path (`taskhub_sqlite::SqliteBackend`,
/// `taskhub_storage::memory::MemoryBackend`).
struct Place {
    /// `taskhub-sqlite`.
    package: String,
    /// `crates/taskhub-sqlite`.
    crate_dir: PathBuf,
    /// The plug-in's module directory: `src`, `src/memory`.
    module_dir: PathBuf,
}

fn place(hub: &TestHub) -> Place {
    let path: String = hub.plugin.chars().filter(|c| !c.is_whitespace()).collect();
    let mut parts: Vec<&str> = path.split("::").collect();
    parts.pop(); // the plug-in type
    let package = parts.first().copied().unwrap_or_default().replace('_', "-");
    let crate_dir = repo_root().join("crates").join(&package);
    let module_dir = parts
        .iter()
        .skip(1)
        .fold(crate_dir.join("src"), |dir, m| dir.join(m));
    Place {
        package,
        crate_dir,
        module_dir,
    }
}

/// What the walk's checked steps ask of `hub`'s backend that it misses.
fn misses(hub: &TestHub, suites: &[(&str, String)]) -> Vec<String> {
    let name = hub.name;
    let place = place(hub);
    let mut missing = Vec::new();
    let mut check = |ok: bool, what: String| {
        if !ok {
            missing.push(what);
        }
    };
    let testing = read(&place.module_dir.join("testing.rs"));
    check(
        testing.contains("fn test_hub_options")
            && testing.contains("fn corrupt_history_event")
            && testing.contains("TEST_HUBS_SHARED"),
        format!(
            "step 5: its test configuration in {}/testing.rs",
            place.module_dir.display()
        ),
    );
    check(
        read(&place.crate_dir.join("tests/conformance.rs")).contains("conformance_tests!"),
        format!(
            "step 2: a conformance_tests! line in {}/tests/conformance.rs",
            place.crate_dir.display()
        ),
    );
    let manifest = read(&repo_root().join("crates/taskhub-backends/Cargo.toml"));
    check(
        manifest.contains(&format!("{}.workspace = true", place.package)),
        format!(
            "step 6: `{}.workspace = true` in crates/taskhub-backends/Cargo.toml",
            place.package
        ),
    );
    check(
        manifest.contains(&format!("\"{}/testing\"", place.package)),
        format!(
            "step 6: \"{}/testing\" in the `testing` feature of crates/taskhub-backends/Cargo.toml",
            place.package
        ),
    );
    for (file, text) in suites {
        check(
            text.contains("backend_matrix!(\n    [every]")
                || text.contains("backend_matrix!([every]"),
            format!("step 7: {file} runs on every backend (`backend_matrix!([every] …)`)"),
        );
    }
    let doc = read(&repo_root().join("docs/BACKENDS.md"));
    check(
        doc.contains(&format!("| `{name}`")) && doc.contains(&format!("`{}`", place.package)),
        format!(
            "step 8: its row (`{name}`, `{}`) in docs/BACKENDS.md",
            place.package
        ),
    );
    missing
}

/// The suites written once for every backend (step 7 of the walk).
fn suites() -> Vec<(&'static str, String)> {
    let root = repo_root();
    [
        "crates/taskhub/tests/common/runtime_suite.rs",
        "crates/taskhub/tests/entities.rs",
        "crates/taskhub/tests/rewind.rs",
        "crates/taskhub/tests/acceptance/carried_order.rs",
        "crates/taskhub-http/tests/df_api.rs",
        "crates/taskhub-http/tests/own_api.rs",
        "crates/taskhub-http/tests/entities_api.rs",
    ]
    .into_iter()
    .map(|file| (file, read(&root.join(file))))
    .collect()
}

#[test]
fn every_backend_has_what_the_walk_in_backends_md_says() {
    let suites = suites();
    for (file, text) in &suites {
        assert!(
            !text.is_empty(),
            "{file} is gone: update docs/BACKENDS.md step 7 and this test"
        );
    }
    let report: Vec<String> = test_hubs()
        .iter()
        .flat_map(|hub| {
            misses(hub, &suites)
                .into_iter()
                .map(move |m| format!("backend `{}` misses {m}", hub.name))
        })
        .collect();
    assert!(
        report.is_empty(),
        "docs/BACKENDS.md:\n{}",
        report.join("\n")
    );
}

#[test]
fn the_test_configurations_follow_backends_in_its_order() {
    let names: Vec<&str> = test_hubs().iter().map(|t| t.name).collect();
    assert_eq!(names, taskhub_backends::names());
    macro_rules! names {
        ([$($name:ident [$($suite:ident)*]),+]) => {
            vec![$(stringify!($name)),+]
        };
    }
    assert_eq!(taskhub_backends::for_each_backend!([names]), names);
}

#[test]
fn the_walk_names_the_registration_list_as_it_is() {
    let lib = read(&repo_root().join("crates/taskhub-backends/src/lib.rs"));
    let doc = read(&repo_root().join("docs/BACKENDS.md"));
    for (hub, (_, suites)) in test_hubs().iter().zip(taskhub_backends::PROCESS_SUITES) {
        let line = format!(
            "    {} => {} [{}],",
            hub.name,
            hub.plugin.replace(' ', ""),
            suites.join(", ")
        );
        assert!(lib.contains(&line), "lib.rs lists `{line}`");
        assert!(
            doc.contains(&line),
            "docs/BACKENDS.md shows the registration list: `{line}` is missing"
        );
    }
}

#[test]
fn a_missing_step_is_named_with_its_backend() {
    let made_up = TestHub {
        name: "cosmos",
        plugin: "taskhub_cosmos::CosmosBackend",
        ..*test_hubs().first().unwrap()
    };
    let missing = misses(&made_up, &[("x.rs", String::new())]);
    for step in ["step 2", "step 5", "step 6", "step 7", "step 8"] {
        assert!(
            missing.iter().any(|m| m.starts_with(step)),
            "{step} in {missing:#?}"
        );
    }
}
