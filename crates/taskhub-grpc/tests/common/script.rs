//! Running an SDK's scenario script (Python or JavaScript) against a Taskhub gRPC endpoint:
//! the script gets the endpoint's address as its argument, runs its checks and prints a line
//! when all of them passed; the test fails with the script's output otherwise.

use std::path::PathBuf;
use std::time::Duration;

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
