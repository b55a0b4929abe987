//! Runs the `taskhub-bench` binary and reads its JSON lines, for the smoke tests.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    dead_code,
    reason = "test code"
)]

use std::process::Command;

/// What a successful run printed: one JSON record a line on stdout, and its stderr.
pub struct Run {
    /// The records, in the order printed.
    pub records: Vec<serde_json::Value>,
    /// What it wrote to stderr (the table).
    pub stderr: String,
}

impl Run {
    /// Asserts that the records are of `scenarios`, in this order, each on `backend`.
    pub fn assert_scenarios(&self, backend: &str, scenarios: &[&str]) {
        let reported: Vec<&str> = self
            .records
            .iter()
            .map(|r| r["scenario"].as_str().unwrap())
            .collect();
        assert_eq!(reported, scenarios);
        for r in &self.records {
            assert_eq!(r["backend"], backend, "{r}");
        }
    }
}

/// Runs `taskhub-bench` with `args` (and `env`), asserts that it succeeded, and parses its
/// stdout.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_taskhub-bench"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run taskhub-bench");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let records = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    Run { records, stderr }
}
