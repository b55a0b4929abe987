//! Cases for `InstanceStore::delete_instance_if`: a row is deleted only at the ETag the caller
//! read, so a write committed in between survives.

use taskhub_core::OrchestrationStatus::Running;

use super::fixtures::{at, iid, json, row};
use crate::clock::ManualClock;
use crate::history::ETag;
use crate::instances::Expect;
use crate::store::TaskHubStore;

/// `delete_instance_if` MUST delete the row when its ETag is the given one and report true;
/// MUST keep a row that changed since (reporting false, not an error); and MUST report false
/// for a missing row.
pub async fn delete_instance_if_deletes_only_the_row_at_that_etag(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    let id = iid("@Counter@idle");
    let first = s
        .put_instance(
            &row("@Counter@idle", "Counter", Running, at(0)),
            Expect::Absent,
        )
        .await
        .expect("put_instance");
    // A batch commits between the clean-up's read and its delete.
    let changed = row("@Counter@idle", "Counter", Running, at(0));
    let changed = crate::instances::InstanceRow {
        custom_status: Some(json("1")),
        ..changed
    };
    let second = s
        .put_instance(&changed, Expect::ETag(first.clone()))
        .await
        .expect("put_instance");
    assert!(
        !s.delete_instance_if(&id, &first)
            .await
            .expect("delete_instance_if"),
        "a row that changed since its ETag was read is not deleted"
    );
    let kept = s
        .get_instance(&id)
        .await
        .expect("get_instance")
        .expect("the changed row survives");
    assert_eq!(kept.custom_status, Some(json("1")));
    assert!(
        !s.delete_instance_if(&id, &ETag("not-an-etag".to_owned()))
            .await
            .expect("delete_instance_if"),
        "an ETag the store never issued matches nothing"
    );
    assert!(
        s.delete_instance_if(&id, &second)
            .await
            .expect("delete_instance_if"),
        "the row at the current ETag is deleted"
    );
    assert_eq!(s.get_instance(&id).await.expect("get_instance"), None);
    assert!(
        !s.delete_instance_if(&id, &second)
            .await
            .expect("delete_instance_if"),
        "a missing row reports false"
    );
}
