//! Helpers for the CLI tests: temporary directories, running `taskhub`, and a worker child.
#![allow(
    clippy::disallowed_methods,
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    reason = "test support"
)]

#[path = "../../../taskhub-grpc/tests/common/calls.rs"]
pub mod calls;
pub mod listening;
pub mod service_hub;
pub mod sidecar;

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::Duration;

pub use taskhub_test_support::{wait, TempDir};

/// A `taskhub` command run in `dir` with no `TASKHUB_*` variables leaking in.
pub fn taskhub(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_taskhub"));
    cmd.current_dir(dir);
    for (key, _) in std::env::vars() {
        if key.starts_with("TASKHUB_") {
            cmd.env_remove(key);
        }
    }
    cmd.env_remove("RUST_LOG");
    cmd
}

/// A `taskhub --db DB` command run in `dir` (see [`taskhub`]).
pub fn on_file(dir: &TempDir, db: &Path) -> Command {
    let mut cmd = taskhub(&dir.0);
    cmd.arg("--db").arg(db);
    cmd
}

/// Runs `taskhub --db <db> args...`.
pub fn run(dir: &TempDir, args: &[&str]) -> Output {
    run_on(dir, &dir.db(), args)
}

/// Runs `taskhub --db DB args...` in `dir`.
pub fn run_on(dir: &TempDir, db: &Path, args: &[&str]) -> Output {
    on_file(dir, db).args(args).output().unwrap()
}

/// Stdout of a run that must succeed.
pub fn ok(dir: &TempDir, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "taskhub {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Stderr of a run that must fail with `code`.
pub fn fails(dir: &TempDir, args: &[&str], code: i32) -> String {
    let out = run(dir, args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "taskhub {args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A deadline for waits on observable state that only a stuck test reaches, even on a loaded
/// machine.
pub use taskhub_test_support::wait::STUCK;

/// Polls `f` every 50 ms until it returns `Some`, for at most `timeout`.
pub fn wait_until<T>(timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
    wait::until_some_blocking("a condition", timeout, f)
}

/// `taskhub worker` as a child process, polling idle queues every 100 ms; killed on drop
/// unless stopped with [`WorkerChild::stop`].
pub struct WorkerChild {
    child: Option<Child>,
    stdout: BufReader<ChildStdout>,
    /// The line the worker printed when it was ready.
    pub ready_line: String,
}

impl WorkerChild {
    pub fn start(dir: &TempDir) -> Self {
        let mut cmd = taskhub(&dir.0);
        cmd.arg("--db")
            .arg(dir.db())
            .args(["--set", "max_queue_polling_interval=100ms", "worker"]);
        Self::spawn(cmd)
    }

    /// Spawns a prepared `taskhub ... worker` command and waits for its ready line.
    pub fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(line.contains("ready"), "worker did not start: {line:?}");
        Self {
            child: Some(child),
            stdout,
            ready_line: line,
        }
    }

    /// Sends SIGTERM and waits for a graceful exit; returns the rest of its stdout.
    pub fn stop(mut self) -> String {
        let mut child = self.child.take().unwrap();
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let mut rest = String::new();
        while self.stdout.read_line(&mut rest).unwrap() > 0 {}
        let exit = child.wait().unwrap();
        assert!(exit.success(), "worker exited with {exit}: {rest}");
        rest
    }
}

impl Drop for WorkerChild {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Stdout of `instances start NAME --id ID --wait SECONDS`, which must succeed.
pub fn start_and_wait(dir: &TempDir, name: &str, id: &str, seconds: &str) -> String {
    ok(
        dir,
        &["instances", "start", name, "--id", id, "--wait", seconds],
    )
}

/// The instance IDs of an `instances list --json` answer, in its order.
pub fn instance_ids(listed: &serde_json::Value) -> Vec<String> {
    listed["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["instance_id"].as_str().unwrap().to_owned())
        .collect()
}

/// The page after `page`, an `instances list --page-size 1 --json` answer, by its
/// continuation token.
pub fn next_single_page(dir: &TempDir, page: &serde_json::Value) -> serde_json::Value {
    let token = page["continuation"].as_str().unwrap();
    json(
        dir,
        &[
            "instances",
            "list",
            "--page-size",
            "1",
            "--continuation",
            token,
            "--json",
        ],
    )
}

/// The status `instances show` gives `id`.
pub fn status(dir: &TempDir, id: &str) -> String {
    json(dir, &["instances", "show", id, "--json"])["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Waits until `id` has the status `want`.
pub fn wait_status(dir: &TempDir, id: &str, want: &str) {
    wait_until(STUCK, || (status(dir, id) == want).then_some(()));
}

/// Starts an `Approval` instance `id` that waits a minute for its event, and waits until it
/// runs.
pub fn start_running_approval(dir: &TempDir, id: &str) {
    ok(
        dir,
        &[
            "instances",
            "start",
            "Approval",
            r#"{"timeout_ms": 60000}"#,
            "--id",
            id,
        ],
    );
    wait_status(dir, id, "Running");
}

/// The JSON stdout of a run that must succeed.
pub fn json(dir: &TempDir, args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok(dir, args)).unwrap()
}
