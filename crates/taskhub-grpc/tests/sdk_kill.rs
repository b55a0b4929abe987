//! SIGKILL of an SDK worker mid-orchestration (issue 34, item 7), for the Go, Java and
//! JavaScript SDKs (the Python SDK's is in python_sdk_worker.rs): a Taskhub worker with an empty
//! registry, one SDK worker process A (tests/go/worker_mode.go, run as `go-sdk-scenarios
//! worker`; tests/java/src/main/java/KillWorker.java; tests/js/kill_worker.js) whose
//! orchestration `TwoSteps` runs a quick activity, then a slow one (A's sleeps 10 minutes).
//! Three orchestrations start; once A runs a slow step, a second process B of the same SDK
//! connects (its slow step is quick) and A is killed with SIGKILL. Every orchestration
//! completes, its slow step run again by B, within 30 s of the kill (the activity timeout is 30
//! minutes), and B ran each slow step once: no work item A held is lost, waits for a timeout, or
//! is handed out twice. On SQLite and on Azurite.
//!
//! Run as `scripts/with-go-sdk.sh scripts/with-java-sdk.sh scripts/with-js-sdk.sh
//! scripts/with-azurite.sh cargo test -p taskhub-grpc --test sdk_kill` (scripts/test.sh does).
#![allow(clippy::disallowed_methods, clippy::unwrap_used, reason = "test code")]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::calls;
use common::sdk::SdkServer;
use common::Backend;
use taskhub_grpc::proto::OrchestrationStatus;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

const COMMAND: &str = "scripts/with-go-sdk.sh scripts/with-java-sdk.sh scripts/with-js-sdk.sh \
                       scripts/with-azurite.sh cargo test -p taskhub-grpc --test sdk_kill";

/// How many orchestrations run through the kill.
const ORCHESTRATIONS: usize = 3;

/// How to start one worker process of an SDK: `program prefix... HOST:PORT NAME SLOW_SECONDS`.
struct Sdk {
    program: String,
    prefix: Vec<String>,
    env: Vec<(&'static str, String)>,
}

fn go() -> Sdk {
    Sdk {
        program: taskhub_test_support::env::go_sdk(COMMAND),
        prefix: vec!["worker".into()],
        env: Vec::new(),
    }
}

fn java() -> Sdk {
    Sdk {
        program: "java".into(),
        prefix: vec!["KillWorker".into()],
        env: vec![("CLASSPATH", taskhub_test_support::env::java_sdk(COMMAND))],
    }
}

fn javascript() -> Sdk {
    Sdk {
        program: "node".into(),
        prefix: vec![Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/js/kill_worker.js")
            .display()
            .to_string()],
        env: vec![("NODE_PATH", taskhub_test_support::env::js_sdk(COMMAND))],
    }
}

/// An SDK worker process, killed when dropped, and the lines it prints.
struct Worker {
    child: tokio::process::Child,
    lines: mpsc::UnboundedReceiver<String>,
    /// The lines read so far.
    read: Vec<String>,
}

impl Sdk {
    fn spawn(&self, addr: &str, name: &str, slow_seconds: u32) -> Worker {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.prefix)
            .arg(addr)
            .arg(name)
            .arg(slow_seconds.to_string())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in &self.env {
            command.env(k, v);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {} {:?}: {e}", self.program, self.prefix));
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = out.next_line().await {
                let _ = tx.send(line);
            }
        });
        Worker {
            child,
            lines,
            read: Vec::new(),
        }
    }
}

impl Worker {
    /// Waits (bounded) until the process has printed `want` `n` times in all, then answers how
    /// many times it printed it by then, more included.
    async fn said_times(&mut self, want: &str, n: usize) -> usize {
        let count = |read: &[String]| read.iter().filter(|l| *l == want).count();
        tokio::time::timeout(Duration::from_secs(60), async {
            while count(&self.read) < n {
                let line = self.lines.recv().await.unwrap_or_else(|| {
                    panic!("the worker ended before printing {want:?} {n} times")
                });
                self.read.push(line);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("the worker did not print {want:?} {n} times within 60 s"));
        while let Ok(line) = self.lines.try_recv() {
            self.read.push(line);
        }
        count(&self.read)
    }

    /// Waits (bounded) until the process has printed `want`.
    async fn said(&mut self, want: &str) {
        self.said_times(want, 1).await;
    }

    async fn kill(mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }
}

async fn a_killed_workers_orchestrations_finish_on_another(sdk: Sdk, backend: Backend) {
    let server = SdkServer::start(backend).await;
    let addr = server.addr.to_string();
    let mut a = sdk.spawn(&addr, "A", 600);
    a.said("worker A started").await;
    server.until_connected(1).await;
    let mut c = server.client().await;
    let ids: Vec<String> = (0..ORCHESTRATIONS).map(|i| format!("kill-{i}")).collect();
    for id in &ids {
        calls::start(&mut c, "TwoSteps", id, None).await;
    }
    a.said("slow step started by A").await;
    let mut b = sdk.spawn(&addr, "B", 0);
    b.said("worker B started").await;
    server.until_connected(2).await;
    a.kill().await;
    let killed = Instant::now();
    let mut firsts = Vec::new();
    for id in &ids {
        let st = calls::wait_done(&mut c, id).await;
        assert_eq!(
            st.orchestration_status,
            OrchestrationStatus::Completed as i32,
            "{id}: {st:?}"
        );
        let output: Vec<String> = serde_json::from_str(st.output.as_deref().unwrap()).unwrap();
        assert!(
            matches!(output.as_slice(), [first, second]
                if (first == "step 1 by A" || first == "step 1 by B") && second == "slow step by B"),
            "{id}: {output:?}"
        );
        firsts.extend(output.into_iter().next());
    }
    // At least the orchestration whose slow step A ran had its first step run by A: that slow
    // step was run again by B.
    assert!(firsts.iter().any(|f| f == "step 1 by A"), "{firsts:?}");
    // Handed over at once, not after the activity timeout (30 minutes).
    assert!(
        killed.elapsed() < Duration::from_secs(30),
        "{:?}",
        killed.elapsed()
    );
    // B ran each slow step once: what A held was handed over once, nothing twice.
    assert_eq!(
        b.said_times("slow step started by B", ORCHESTRATIONS).await,
        ORCHESTRATIONS
    );
    b.kill().await;
    server.stop().await;
}

common::on_backends!(
    a_killed_workers_orchestrations_finish_on_another(go()),
    a_killed_go_sdk_workers_orchestrations_finish_on_another_on_sqlite = Sqlite,
    a_killed_go_sdk_workers_orchestrations_finish_on_another_on_azurite = Azure
);

common::on_backends!(
    a_killed_workers_orchestrations_finish_on_another(java()),
    a_killed_java_sdk_workers_orchestrations_finish_on_another_on_sqlite = Sqlite,
    a_killed_java_sdk_workers_orchestrations_finish_on_another_on_azurite = Azure
);

common::on_backends!(
    a_killed_workers_orchestrations_finish_on_another(javascript()),
    a_killed_javascript_sdk_workers_orchestrations_finish_on_another_on_sqlite = Sqlite,
    a_killed_javascript_sdk_workers_orchestrations_finish_on_another_on_azurite = Azure
);
