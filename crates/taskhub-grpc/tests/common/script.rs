//! Running an SDK's scenario script (Python or JavaScript) against a Taskhub gRPC endpoint:
//! the script gets the endpoint's address as its argument, runs its checks and prints a line
//! when all of them passed; the test fails with the script's output otherwise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufRead, Lines};

use super::sdk::SdkServer;

/// A scenario script and what it must print.
pub struct Script<'a> {
    /// The interpreter (the venv's python, or `node`).
    pub program: &'a str,
    /// The script file.
    pub path: PathBuf,
    /// Environment variables for it (e.g. `NODE_PATH`).
    pub env: Vec<(&'a str, String)>,
    /// A line the script prints only when every check passed.
    pub passed: &'a str,
    /// How long it may run.
    pub within: Duration,
}

/// A file under this crate's `tests/` directory (`python/worker_scenarios.py`).
pub fn test_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(relative)
}

impl<'a> Script<'a> {
    /// `tests/RELATIVE` run by the SDK venv's `python`, within ten minutes.
    pub fn python(python: &'a str, relative: &str, passed: &'a str) -> Self {
        Self {
            program: python,
            path: test_file(relative),
            env: Vec::new(),
            passed,
            within: Duration::from_secs(600),
        }
    }

    /// `tests/RELATIVE` run by `node` with the SDK's `NODE_PATH`, within ten minutes.
    pub fn node(node_path: String, relative: &str, passed: &'a str) -> Self {
        Self {
            program: "node",
            path: test_file(relative),
            env: vec![("NODE_PATH", node_path)],
            passed,
            within: Duration::from_secs(600),
        }
    }

    /// The same script, given `within` to run.
    pub fn within(self, within: Duration) -> Self {
        Self { within, ..self }
    }
}

/// Runs `script` against `server`'s endpoint, asserts it passed, and stops the server.
pub async fn run_and_stop(script: Script<'_>, server: SdkServer) {
    run(script, &server.addr.to_string()).await;
    server.stop().await;
}

/// Waits (at most a minute) until `lines` gives the line `expected`; `who` names the process.
pub async fn until_line<R>(lines: &mut Lines<R>, who: &str, expected: &str)
where
    R: AsyncBufRead + Unpin,
{
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line == expected {
                return;
            }
        }
        panic!("{who} ended before printing {expected:?}");
    })
    .await
    .unwrap_or_else(|_| panic!("{who} did not print {expected:?} within 60 s"));
}

/// Runs `script` against the endpoint at `addr` and asserts it passed.
pub async fn run(script: Script<'_>, addr: &str) {
    let mut command = tokio::process::Command::new(script.program);
    command.arg(&script.path).arg(addr).kill_on_drop(true);
    for (k, v) in &script.env {
        command.env(k, v);
    }
    let name = script.path.display();
    let out = tokio::time::timeout(script.within, command.output())
        .await
        .unwrap_or_else(|_| panic!("{name} did not finish within {:?}", script.within))
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.program));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(stdout.contains(script.passed), "{name}:\n{stdout}");
}

/// Starts an SDK worker process: `program path addr name`, its stdout piped (it prints a line
/// when it has connected), killed when dropped.
pub fn spawn_worker(program: &str, path: PathBuf, addr: &str, name: &str) -> tokio::process::Child {
    tokio::process::Command::new(program)
        .arg(&path)
        .arg(addr)
        .arg(name)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the SDK worker {}: {e}", path.display()))
}
