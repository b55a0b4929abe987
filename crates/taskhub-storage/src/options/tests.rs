//! The layering on a small options struct: order of the sources, older spellings, errors.

use std::path::PathBuf;

use super::*;

#[derive(Debug, Default, PartialEq)]
struct Demo {
    path: String,
    size: usize,
}

impl BackendOptions for Demo {
    const TABLE: &'static str = "demo";
    const NAMES: &'static [&'static str] = &["path", "size"];
    const LEGACY_ENV: &'static [(&'static str, &'static str)] = &[("TASKHUB_SIZE", "size")];

    fn set(&mut self, name: &str, value: &str, origin: &str) -> Result<(), OptionError> {
        match name {
            "path" => value.clone_into(&mut self.path),
            "size" => {
                self.size = parse::count(value).map_err(|r| Self::invalid(name, origin, r))?;
            }
            _ => return Err(Self::unknown(name, origin)),
        }
        Ok(())
    }

    fn text_of(&self, name: &str) -> String {
        match name {
            "size" => self.size.to_string(),
            _ => String::new(),
        }
    }
}

/// Demo with the older top-level keys and strings only.
#[derive(Debug, Default)]
struct Old(Demo);

impl BackendOptions for Old {
    const TABLE: &'static str = "demo";
    const NAMES: &'static [&'static str] = Demo::NAMES;
    const TOP_LEVEL_KEYS: bool = true;
    const STRINGS_ONLY: bool = true;

    fn set(&mut self, name: &str, value: &str, origin: &str) -> Result<(), OptionError> {
        self.0.set(name, value, origin)
    }
}

fn temp_file(tag: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("taskhub-options-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("taskhub.toml");
    std::fs::write(&file, text).unwrap();
    file
}

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn later_sources_win_and_the_older_variable_comes_first() {
    let file = temp_file("order", "other = 1\n[demo]\npath = \"file\"\nsize = 2\n");
    let config = BackendConfig {
        defaults: vec![OptionValue::new("demo.path", "default", "the defaults")],
        file: Some(file.clone()),
        env: env(&[("TASKHUB_SIZE", "3"), ("TASKHUB_DEMO_SIZE", "4")]),
        overrides: vec![OptionValue::new("demo.path", "flag", "--set")],
        ..BackendConfig::default()
    };
    let got = Demo::default().layered(&config).unwrap();
    assert_eq!(
        got,
        Demo {
            path: "flag".into(),
            size: 4
        }
    );
    let got = Demo::default()
        .with_sources(Some(&file), &env(&[("TASKHUB_SIZE", "5")]))
        .unwrap();
    assert_eq!((got.path.as_str(), got.size), ("file", 5));
    let missing = file.with_file_name("none.toml");
    assert_eq!(
        Demo::default()
            .with_sources(Some(&missing), &HashMap::new())
            .unwrap(),
        Demo::default()
    );
}

#[test]
fn errors_name_the_option_and_its_source() {
    let err = Demo::default()
        .with_sources(None, &env(&[("TASKHUB_DEMO_BOGUS", "1")]))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "invalid setting demo.bogus (from TASKHUB_DEMO_BOGUS): unknown option (known: path, size)"
    );
    let file = temp_file("errors", "[demo]\nsize = 0\n");
    let err = Demo::default().with_sources(Some(&file), &HashMap::new());
    let err = err.unwrap_err().to_string();
    assert!(
        err.contains("demo.size") && err.contains("taskhub.toml") && err.contains("at least 1"),
        "{err}"
    );
    std::fs::write(&file, "demo = 3\n").unwrap();
    let err = Demo::default().apply_file(&file).unwrap_err().to_string();
    assert!(err.contains("expected a table [demo]"), "{err}");
    std::fs::write(&file, "[demo]\npath = [1]\n").unwrap();
    let err = Demo::default().apply_file(&file).unwrap_err().to_string();
    assert!(
        err.contains("expected a string, number or boolean"),
        "{err}"
    );
    std::fs::write(&file, "[demo\n").unwrap();
    assert!(matches!(
        Demo::default().apply_file(&file),
        Err(OptionError::File { .. })
    ));
    let backend = Demo::missing("path", "set it");
    assert_eq!(
        backend.to_string(),
        "invalid setting demo.path (from no source: it is not set): set it"
    );
}

#[test]
fn older_top_level_keys_come_before_the_table_and_strings_only() {
    let file = temp_file(
        "old",
        "demo_path = \"old\"\ndemo_size = \"2\"\n[demo]\npath = \"new\"\n",
    );
    let got = Old::default().with_sources(Some(&file), &HashMap::new());
    let got = got.unwrap().0;
    assert_eq!((got.path.as_str(), got.size), ("new", 2));
    std::fs::write(&file, "[demo]\nsize = 2\n").unwrap();
    let err = Old::default().apply_file(&file).unwrap_err().to_string();
    assert!(
        err.contains("demo.size") && err.contains("expected a string"),
        "{err}"
    );
    // Without TOP_LEVEL_KEYS the older keys are not read.
    std::fs::write(&file, "demo_path = \"old\"\n").unwrap();
    assert_eq!(
        Demo::default()
            .with_sources(Some(&file), &HashMap::new())
            .unwrap(),
        Demo::default()
    );
}

#[test]
fn docs_list_every_option_with_its_variables() {
    let docs = Demo {
        size: 7,
        ..Demo::default()
    }
    .docs();
    let size = docs.iter().find(|d| d.name == "size").unwrap();
    assert_eq!(size.default, "7");
    assert_eq!(size.env, vec!["TASKHUB_DEMO_SIZE", "TASKHUB_SIZE"]);
    assert_eq!(docs.len(), 2);
}
