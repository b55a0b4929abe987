//! The official Durable Task Java SDK (`com.microsoft:durabletask-client` 1.5.0, pinned in
//! tests/java/pom.xml) as a WORKER and as a client, unchanged: a Taskhub worker with an empty
//! registry hands every orchestration turn and activity to the SDK worker connected to its gRPC
//! endpoint. That worker declares no capacity, runs every work item inline on its stream's
//! thread (one at a time), completes without a completion token, knows no health pings and no
//! entities, and on any error from a completion call leaves its loop and reconnects.
//!
//! tests/java/src/main/java/Scenarios.java (built by scripts/with-java-sdk.sh) runs
//! orchestrations written with the SDK (sequence, fan-out/fan-in, sub-orchestration, timer,
//! external events before and after the wait, a wait with a timeout, anyOf with a timer,
//! continue-as-new keeping and dropping unread events, activity and sub-orchestration retries,
//! failure details, custom status, suspend/resume, terminate, metadata, query with paging,
//! scheduled start, restart, purge) and asserts every result, on SQLite and on Azurite. Then the
//! slow-activity case of issue 34 item 2, scaled: a 20 s activity holds the worker's only thread
//! while 50 orchestrations are started; here a turn may be held 10 s, a stream may leave items
//! unread 10 s and a turn waits 5 s for a busy worker before it goes back to its queue (as the
//! issue's 3-minute activity passes the 2-minute, 60 s and 60 s defaults), and all of them must
//! complete, each activity run once. Last, that no completion was refused, the
//! worker never reconnected and no work item it does not know reached it: health pings go out
//! every second here and an entity is signalled first, so a ping or an entity batch sent to the
//! Java worker would show.
//!
//! Run as `scripts/with-java-sdk.sh scripts/with-azurite.sh cargo test -p taskhub-grpc --test
//! java_sdk_worker`
//! (scripts/test.sh does); without it, it fails saying so. The full size (a 3-minute
//! activity, 200 orchestrations, the endpoint's default timeouts): the same with
//! `TASKHUB_SLOW_SECONDS=180 TASKHUB_BEHIND_SLOW=200` (about 4 minutes a backend).

mod common;

use std::time::Duration;

use common::sdk::SdkServer;
use common::Backend;
use taskhub_grpc::DispatcherSettings;

common::on_backends!(
    run_scenarios,
    java_sdk_workers_run_orchestrations_on_sqlite = Sqlite,
    java_sdk_workers_run_orchestrations_on_azurite = Azure
);

async fn run_scenarios(backend: Backend) {
    let classpath = taskhub_test_support::env::java_sdk(
        "scripts/with-azurite.sh cargo test -p taskhub-grpc --test java_sdk_worker",
    );
    // TASKHUB_SLOW_SECONDS (and TASKHUB_BEHIND_SLOW) run the slow-activity case at full size
    // with the endpoint's default timeouts: `TASKHUB_SLOW_SECONDS=180 TASKHUB_BEHIND_SLOW=200`
    // is the case. Unset: scaled (20 s, 50) with timeouts scaled alike.
    let full_size: Option<u64> = std::env::var("TASKHUB_SLOW_SECONDS")
        .ok()
        .and_then(|v| v.trim().parse().ok());
    let mut settings = DispatcherSettings::default();
    if full_size.is_none() {
        settings.orchestration_timeout = Duration::from_secs(10);
        settings.stream_read_timeout = Duration::from_secs(10);
        settings.busy_wait = Duration::from_secs(5);
    }
    let mut env = vec![("CLASSPATH", classpath)];
    for name in ["TASKHUB_SLOW_SECONDS", "TASKHUB_BEHIND_SLOW"] {
        if let Ok(v) = std::env::var(name) {
            env.push((name, v));
        }
    }
    // The Java worker declared no entity support: no ping and no entity batch may reach it.
    let server = SdkServer::start_without_entities(backend, settings, "java").await;
    // `java Scenarios HOST:PORT`, the classpath in CLASSPATH: the script runner passes the
    // main class where a script's path goes, then the address.
    let scenarios = common::script::Script {
        program: "java",
        path: "Scenarios".into(),
        env,
        passed: "all 24 Java SDK worker checks passed",
        within: Duration::from_secs(300 + 4 * full_size.unwrap_or(0)),
    };
    common::script::run(scenarios, &server.addr.to_string()).await;
    server.stop().await;
}
