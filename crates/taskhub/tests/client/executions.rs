//! The status of a given execution (`TaskHubClient::get_execution`): after continue-as-new
//! replaced an execution's history, its status, input, output and times are still there; the
//! current execution reads from the row; an unknown execution is a typed `ExecutionNotFound`.
//! On SQLite and on the memory backend.

use std::sync::Arc;

use crate::common::history::history_of;
use crate::common::registries::countdown_registry;
use crate::common::two_stores::memory_and_sqlite;
use crate::common::*;
use taskhub::*;
use taskhub_storage::TaskHubStore;

async fn every_execution_keeps_its_status(store: Arc<dyn TaskHubStore>) {
    let hub = TaskHub::open(store, fast_settings()).await.unwrap();
    let client = hub.client();
    let id = InstanceId::new("countdown").unwrap();
    start_as(&client, "Countdown", &id, 0u32).await;
    // No worker yet: the row names the first execution.
    let first = row_of(&client, &id).await.execution_id;
    let pending = client.get_execution(&id, &first).await.unwrap();
    assert!(pending.current);
    assert_eq!(pending.status, OrchestrationStatus::Pending);

    let worker = Worker::start(&hub, countdown_registry()).await.unwrap();
    let done = wait_done(&client, &id, STUCK).await;
    assert_eq!(done.output::<u32>().unwrap(), Some(300));
    assert_ne!(done.row.execution_id, first);

    // The first execution's history is gone (continue-as-new replaced it), its record is not.
    let history = history_of(&client, &id).await;
    assert!(history.iter().all(|e| !matches!(
        &e.event,
        EventKind::ExecutionStarted { execution_id, .. } if *execution_id == first
    )));
    let old = client.get_execution(&id, &first).await.unwrap();
    assert!(!old.current);
    assert_eq!(old.status, OrchestrationStatus::ContinuedAsNew);
    assert_eq!(old.input.parse::<u32>("input").unwrap(), 0);
    assert_eq!(old.output.unwrap().parse::<u32>("output").unwrap(), 1);
    assert_eq!(
        old.custom_status
            .unwrap()
            .parse::<String>("status")
            .unwrap(),
        "at 0"
    );
    assert!(old.completed_at.unwrap() >= old.started_at);

    // Every execution is there, in order, each starting when the one before it ended.
    let row = done.row;
    assert_eq!(row.executions.len(), 3);
    for (n, pair) in row.executions.windows(2).enumerate() {
        assert_eq!(pair[0].completed_at, pair[1].started_at, "execution {n}");
        let e = client
            .get_execution(&id, &pair[1].execution_id)
            .await
            .unwrap();
        assert_eq!(e.input.parse::<u32>("input").unwrap(), n as u32 + 1);
    }
    let current = client.get_execution(&id, &row.execution_id).await.unwrap();
    assert!(current.current);
    assert_eq!(current.status, OrchestrationStatus::Completed);
    assert_eq!(current.output.unwrap().parse::<u32>("output").unwrap(), 300);
    assert_eq!(
        Some(current.started_at),
        row.executions.last().map(|e| e.completed_at)
    );

    let unknown = ExecutionId::new("no-such-execution").unwrap();
    assert!(matches!(
        client.get_execution(&id, &unknown).await,
        Err(TaskhubError::ExecutionNotFound { .. })
    ));
    assert!(matches!(
        client
            .get_execution(&InstanceId::new("nobody").unwrap(), &first)
            .await,
        Err(TaskhubError::NotFound(_))
    ));
    worker.shutdown().await;
}

memory_and_sqlite!(
    every_execution_keeps_its_status, "executions":
    executions_on_memory,
    executions_on_sqlite,
);
