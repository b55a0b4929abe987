//! Cases for [`PayloadStore`](crate::PayloadStore).

use super::fixtures::iid;
use crate::clock::ManualClock;
use crate::store::TaskHubStore;

async fn put(s: &dyn TaskHubStore, instance: &str, name: &str, data: &[u8]) {
    s.put_payload(&iid(instance), name, data.to_vec())
        .await
        .expect("put_payload");
}

async fn get(s: &dyn TaskHubStore, instance: &str, name: &str) -> Option<Vec<u8>> {
    s.get_payload(&iid(instance), name)
        .await
        .expect("get_payload")
}

/// `put_payload` MUST overwrite an existing blob of the same key.
pub async fn put_payload_overwrites_same_key(s: &dyn TaskHubStore, _clock: &ManualClock) {
    put(
        s,
        "blobs",
        "input",
        b"first version, longer than the second",
    )
    .await;
    put(s, "blobs", "output", b"untouched").await;
    put(s, "blobs", "input", b"second").await;
    assert_eq!(
        get(s, "blobs", "input").await.as_deref(),
        Some(&b"second"[..])
    );
    assert_eq!(
        get(s, "blobs", "output").await.as_deref(),
        Some(&b"untouched"[..]),
        "other names are not affected"
    );
}

/// `get_payload` MUST return exactly the bytes stored.
pub async fn get_payload_returns_exact_bytes(s: &dyn TaskHubStore, _clock: &ManualClock) {
    let every_byte: Vec<u8> = (0..=255).collect();
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let large: Vec<u8> = (0..3 * 1024 * 1024 + 17)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let blobs: [(&str, Vec<u8>); 5] = [
        ("empty", Vec::new()),
        ("every-byte", every_byte),
        ("not utf-8", vec![0xff, 0xfe, 0x00, 0xc3, 0x28]),
        ("n\u{e4}me:with/odd chars", b"{\"json\":true}".to_vec()),
        ("large", large),
    ];
    for (name, data) in &blobs {
        put(s, "exact", name, data).await;
    }
    for (name, data) in &blobs {
        let got = get(s, "exact", name).await;
        assert!(
            got.as_ref() == Some(data),
            "blob {name:?} ({} bytes) came back as {:?} bytes",
            data.len(),
            got.map(|g| g.len())
        );
    }
}

/// `get_payload` MUST return `None` for a blob that was never stored.
pub async fn get_missing_payload_is_none(s: &dyn TaskHubStore, _clock: &ManualClock) {
    assert_eq!(get(s, "nobody", "input").await, None);
    put(s, "somebody", "input", b"x").await;
    assert_eq!(get(s, "somebody", "output").await, None, "unknown name");
    assert_eq!(
        get(s, "somebody-else", "input").await,
        None,
        "unknown instance"
    );
}

/// `delete_payloads` MUST delete every blob of the instance and return how many it deleted.
pub async fn delete_payloads_removes_every_blob_of_instance_and_counts(
    s: &dyn TaskHubStore,
    _clock: &ManualClock,
) {
    for name in ["input", "output", "event:1"] {
        put(s, "a", name, name.as_bytes()).await;
    }
    put(s, "ab", "input", b"neighbour with a longer ID").await;
    put(s, "b", "input", b"other instance").await;
    let deleted = s.delete_payloads(&iid("a")).await.expect("delete_payloads");
    assert_eq!(deleted, 3);
    for name in ["input", "output", "event:1"] {
        assert_eq!(
            get(s, "a", name).await,
            None,
            "blob {name:?} of 'a' is gone"
        );
    }
    assert!(
        get(s, "ab", "input").await.is_some(),
        "'ab' is another instance"
    );
    assert!(
        get(s, "b", "input").await.is_some(),
        "'b' is another instance"
    );
    let again = s.delete_payloads(&iid("a")).await.expect("delete_payloads");
    assert_eq!(again, 0, "nothing left to delete");
}
