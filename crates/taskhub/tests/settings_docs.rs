//! The settings have one source of truth, `Settings` and its `Default`: the settings table of
//! `docs/SETTINGS.md` has exactly one row per setting, with the right environment variable and the real
//! default, and every "Default …" a field's rustdoc states is the real default too. A default
//! changed in code but not in the docs (or the reverse) fails here.
//!
//! Each backend's options (`[sqlite]`, `[azure]`, …) have a table of their own, checked here
//! against what the backend's crate says of them (`taskhub_backends::BACKENDS`, its
//! `options()`, made from its real defaults). The `taskhub` binary's own settings are checked
//! by its unit test (`crates/taskhub-cli/src/own_settings.rs`).
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use std::collections::BTreeMap;

use taskhub::settings::names;
use taskhub::Settings;

const SETTINGS_DOC: &str = include_str!("../../../docs/SETTINGS.md");
const SOURCE: &str = include_str!("../src/settings/mod.rs");

/// One documented default: where it was written, and its text.
struct Documented {
    place: &'static str,
    text: String,
}

/// The rows of the runtime's settings table in `docs/SETTINGS.md` (the first table after
/// `## Runtime settings`): each name in
/// the first cell, with the default and environment-variable cells.
fn readme_rows() -> BTreeMap<String, (String, String)> {
    let section = SETTINGS_DOC
        .split("\n## Runtime settings\n")
        .nth(1)
        .expect("docs/SETTINGS.md has a Runtime settings section");
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in section.lines() {
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        in_table = true;
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if cells.len() < 4 || !cells[0].starts_with('`') {
            continue; // header or separator
        }
        let env_names: Vec<&str> = cells[2].split(", ").collect();
        for (i, name) in cells[0].split(", ").enumerate() {
            let name = name.trim_matches('`').to_owned();
            let env = env_names.get(i).copied().unwrap_or("").to_owned();
            let previous = rows.insert(name.clone(), (cells[1].to_owned(), env));
            assert!(
                previous.is_none(),
                "setting {name} has two rows in docs/SETTINGS.md"
            );
        }
    }
    rows
}

/// The "Default …" sentence of each field's rustdoc in `settings/mod.rs`.
fn rustdoc_defaults() -> BTreeMap<String, String> {
    let body = SOURCE
        .split("pub struct Settings {")
        .nth(1)
        .and_then(|s| s.split("\n}\n").next())
        .expect("the Settings struct in settings/mod.rs");
    let mut defaults = BTreeMap::new();
    let mut doc = String::new();
    for line in body.lines().map(str::trim) {
        if let Some(text) = line.strip_prefix("///") {
            doc.push(' ');
            doc.push_str(text.trim());
        } else if let Some(field) = line.strip_prefix("pub ") {
            let name = field.split(':').next().unwrap_or_default().to_owned();
            if let Some(at) = doc.find(" Default") {
                let text = doc[at + " Default".len()..].trim_start_matches(':').trim();
                let end = text.find(". ").unwrap_or(text.len());
                defaults.insert(name, text[..end].trim_end_matches('.').to_owned());
            }
            doc.clear();
        }
    }
    defaults
}

/// Normalizes a documented default to the text `Settings::set` reads, or `None` for "no value".
fn normalized(text: &str) -> Option<String> {
    // Drop a trailing remark in parentheses ("15 s (the original's 30 s)"), backticks and
    // thousands separators.
    let text = match text.find(" (") {
        Some(at) if !text.starts_with('(') => &text[..at],
        _ => text,
    };
    let text = text.replace(['`', ','], "");
    let text = text.trim();
    if ["none", "(none)", "empty", ""].contains(&text) {
        return None;
    }
    // "30 s" / "5 min": humantime wants the unit next to the number.
    Some(match text.split_once(' ') {
        Some((n, unit)) if n.parse::<f64>().is_ok() && !unit.contains(' ') => format!("{n}{unit}"),
        _ => text.to_owned(),
    })
}

/// Checks that `documented` is `name`'s real default.
fn check(name: &str, documented: &Documented, failures: &mut Vec<String>) {
    let defaults = Settings::default();
    let json = serde_json::to_value(&defaults).unwrap();
    match normalized(&documented.text) {
        None => {
            // Unset: no value, or an enum's `none`.
            let value = &json[name];
            if !(value.is_null() || matches!(value.as_str(), Some("" | "none"))) {
                failures.push(format!(
                    "{}: {name} is documented as having no default, but it is {value}",
                    documented.place
                ));
            }
        }
        Some(text) if text == "<hostname>-<pid>" => {
            let suffix = format!("-{}", std::process::id());
            if !defaults.worker_id.ends_with(&suffix) {
                failures.push(format!(
                    "{}: worker_id defaults to {:?}, not <hostname>-<pid>",
                    documented.place, defaults.worker_id
                ));
            }
        }
        Some(text) => {
            let mut set = Settings::default();
            match set.set(name, &text) {
                Ok(()) if set == defaults => {}
                Ok(()) => failures.push(format!(
                    "{}: {name} is documented with default {:?}, but the default is {}",
                    documented.place, documented.text, json[name]
                )),
                Err(e) => failures.push(format!(
                    "{}: {name}'s documented default {:?} does not parse: {e}",
                    documented.place, documented.text
                )),
            }
        }
    }
}

#[test]
fn the_settings_doc_table_has_one_row_per_setting_with_its_real_default() {
    let rows = readme_rows();
    let documented: Vec<&String> = rows.keys().collect();
    let known: Vec<&String> = names().iter().collect();
    assert_eq!(
        documented, known,
        "the settings table of docs/SETTINGS.md must list exactly the settings"
    );
    let mut failures = Vec::new();
    for (name, (default, env)) in &rows {
        let want_env = format!("TASKHUB_{}", name.to_uppercase());
        if env.trim_matches('`') != want_env {
            failures.push(format!(
                "docs/SETTINGS.md: {name}'s variable is {env}, not {want_env}"
            ));
        }
        let documented = Documented {
            place: "docs/SETTINGS.md",
            text: default.clone(),
        };
        check(name, &documented, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_default_a_field_doc_states_is_the_real_default() {
    let defaults = rustdoc_defaults();
    assert!(
        defaults.len() >= 25,
        "the field docs state defaults: found only {defaults:?}"
    );
    let mut failures = Vec::new();
    for (name, text) in &defaults {
        assert!(names().contains(name), "{name} is not a setting");
        let documented = Documented {
            place: "settings/mod.rs",
            text: text.clone(),
        };
        check(name, &documented, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The rows of the table `| `[<table>]` option | …` in `docs/SETTINGS.md`: name → (default,
/// variables).
fn backend_rows(table: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let header = format!("| `[{table}]` option |");
    let section = SETTINGS_DOC
        .split(&header)
        .nth(1)
        .unwrap_or_else(|| panic!("docs/SETTINGS.md has no table of [{table}] options"));
    let mut rows = BTreeMap::new();
    for line in section.lines().skip(1).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if cells.len() < 4 || !cells[0].starts_with('`') {
            continue; // separator
        }
        let env = cells[2]
            .split(", ")
            .map(|v| v.trim_matches('`').to_owned())
            .collect();
        let previous = rows.insert(
            cells[0].trim_matches('`').to_owned(),
            (cells[1].to_owned(), env),
        );
        assert!(previous.is_none(), "{table}.{} has two rows", cells[0]);
    }
    rows
}

/// Checks one documented backend option against the backend's own description.
fn check_option(
    table: &str,
    doc: &taskhub_backends::OptionDoc,
    documented: Option<&(String, Vec<String>)>,
    failures: &mut Vec<String>,
) {
    let Some((default, env)) = documented else {
        failures.push(format!("docs/SETTINGS.md: no row for {table}.{}", doc.name));
        return;
    };
    let want = normalized(default).unwrap_or_default();
    let real = normalized(&doc.default).unwrap_or_default();
    if want != real {
        failures.push(format!(
            "docs/SETTINGS.md: {table}.{} is documented with default {default:?}, but the default is {:?}",
            doc.name, doc.default
        ));
    }
    if env != &doc.env {
        failures.push(format!(
            "docs/SETTINGS.md: {table}.{}'s variables are {env:?}, not {:?}",
            doc.name, doc.env
        ));
    }
}

#[test]
fn every_backend_option_has_a_row_with_its_real_default_and_variables() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for backend in taskhub_backends::BACKENDS {
        let options = backend.options();
        if options.is_empty() {
            continue;
        }
        let table = backend.name();
        let rows = backend_rows(table);
        let documented: Vec<&String> = rows.keys().collect();
        let mut real: Vec<String> = options.iter().map(|o| o.name.to_owned()).collect();
        real.sort();
        assert_eq!(
            documented,
            real.iter().collect::<Vec<_>>(),
            "the [{table}] table of docs/SETTINGS.md must list exactly its options"
        );
        for doc in &options {
            check_option(table, doc, rows.get(doc.name), &mut failures);
            checked += 1;
        }
    }
    assert!(checked >= 13, "sqlite and azure options are checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_wrong_documented_default_is_caught() {
    // A backend option documented wrongly is reported too.
    let doc = taskhub_backends::OptionDoc {
        name: "busy_timeout",
        default: "5s".to_owned(),
        env: vec!["TASKHUB_SQLITE_BUSY_TIMEOUT".to_owned()],
    };
    let mut failures = Vec::new();
    let wrong = ("10 s".to_owned(), vec!["TASKHUB_SQLITE_BUSY".to_owned()]);
    check_option("sqlite", &doc, Some(&wrong), &mut failures);
    check_option("sqlite", &doc, None, &mut failures);
    assert_eq!(failures.len(), 3, "{failures:?}");
    let right = ("5 s".to_owned(), doc.env.clone());
    let mut none = Vec::new();
    check_option("sqlite", &doc, Some(&right), &mut none);
    assert!(none.is_empty(), "{none:?}");

    // The check itself can fail: a default that is not the real one is reported.
    let mut failures = Vec::new();
    let wrong = Documented {
        place: "here",
        text: "45 s".to_owned(),
    };
    check("lease_interval", &wrong, &mut failures);
    let none = Documented {
        place: "here",
        text: "none".to_owned(),
    };
    check("partition_count", &none, &mut failures);
    assert_eq!(failures.len(), 2, "{failures:?}");
    assert_eq!(normalized("10,000"), Some("10000".to_owned()));
    assert_eq!(
        normalized("15 s (the original's 30 s)"),
        Some("15s".to_owned())
    );
    assert_eq!(normalized("`TaskHub`"), Some("TaskHub".to_owned()));
    assert_eq!(normalized("(none)"), None);
}
