//! A large instance row keeps one data blob: replacing the row deletes the replaced version's
//! blob (it once stayed until the purge, one per turn of an instance with a large row), a row
//! that shrinks back inline leaves none, a conditional delete removes it, and a stale replace
//! deletes nothing the current row needs. Run with Azurite:
//! `scripts/with-azurite.sh cargo test -p taskhub --test azure row_blobs::`.

use crate::backends;
use taskhub::{ExecutionId, InstanceId, InstanceRow, OrchestrationStatus, Payload, Timestamp};
use taskhub_storage::{Expect, InstanceStore};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);

fn row(id: &InstanceId, input_bytes: usize) -> InstanceRow {
    let text = format!("\"{}\"", "x".repeat(input_bytes));
    InstanceRow {
        instance_id: id.clone(),
        name: "Big".into(),
        version: None,
        execution_id: ExecutionId::new("e1").unwrap(),
        status: OrchestrationStatus::Running,
        input: Payload::from_json(text).unwrap(),
        output: None,
        failure: None,
        custom_status: None,
        created_at: START,
        updated_at: START,
        completed_at: None,
        scheduled_start: None,
        partition: 0,
        tags: Default::default(),
        executions: Vec::new(),
        etag: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_row_keeps_one_blob() {
    let s = backends::azure_store(&backends::unique_hub_name()).await;
    let id = InstanceId::new("big-row").unwrap();

    let mut etag = s
        .put_instance(&row(&id, 40_000), Expect::Absent)
        .await
        .unwrap();
    assert_eq!(s.instance_blobs(&id).await.unwrap().len(), 1);
    for i in 0..3 {
        etag = s
            .put_instance(&row(&id, 40_000 + i), Expect::ETag(etag))
            .await
            .unwrap();
        assert_eq!(
            s.instance_blobs(&id).await.unwrap().len(),
            1,
            "replace {i} left the replaced version's blob"
        );
    }
    // Read back through a get (its ETag names the blob too) and replaced from there.
    let read = s.get_instance(&id).await.unwrap().unwrap();
    assert_eq!(read.input, row(&id, 40_002).input);
    etag = s
        .put_instance(&row(&id, 50_000), Expect::ETag(read.etag.unwrap()))
        .await
        .unwrap();
    assert_eq!(s.instance_blobs(&id).await.unwrap().len(), 1);

    // A stale replace is refused and deletes nothing the current row needs.
    let stale = s
        .put_instance(&row(&id, 60_000), Expect::ETag(etag.clone()))
        .await;
    assert!(stale.is_ok(), "the current ETag is not stale: {stale:?}");
    let current = s.get_instance(&id).await.unwrap().unwrap();
    let refused = s.put_instance(&row(&id, 70_000), Expect::ETag(etag)).await;
    assert!(refused.unwrap_err().is_conflict());
    assert_eq!(
        s.get_instance(&id).await.unwrap().unwrap().input,
        row(&id, 60_000).input,
        "the current row still reads"
    );

    // Back inline: no blob left.
    let small = s
        .put_instance(&row(&id, 10), Expect::ETag(current.etag.unwrap()))
        .await
        .unwrap();
    let blobs = s.instance_blobs(&id).await.unwrap();
    assert!(
        blobs.len() <= 1,
        "at most the refused write's blob stays until the purge: {blobs:?}"
    );
    let again = s
        .put_instance(&row(&id, 45_000), Expect::ETag(small))
        .await
        .unwrap();
    assert!(s.delete_instance_if(&id, &again).await.unwrap());
    let left = s.instance_blobs(&id).await.unwrap();
    assert!(
        left.len() <= 1,
        "the deleted row's blob is gone (the refused write's may stay): {left:?}"
    );
}
