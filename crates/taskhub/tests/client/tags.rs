//! Instance tags end to end: set at the start, shown in the status, kept across
//! continue-as-new and by a restart, filtered on by listings; bad tags are a typed error and
//! start nothing. On SQLite and on the memory backend. The caps are the hub's settings.

use std::sync::Arc;

use crate::common::registries::countdown_registry;
use crate::common::two_stores::memory_and_sqlite;
use crate::common::*;
use taskhub::*;
use taskhub_storage::TaskHubStore;

fn tags(pairs: &[(&str, &str)]) -> Tags {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Starts `Countdown` from 0 as `id` with `tags`.
async fn start_countdown(
    client: &TaskHubClient,
    id: &str,
    tags: Tags,
) -> Result<InstanceId, TaskhubError> {
    client
        .start_with(
            "Countdown",
            0u32,
            StartOptions {
                instance_id: Some(InstanceId::new(id).unwrap()),
                tags,
                ..StartOptions::default()
            },
        )
        .await
}

async fn tags_survive_and_filter(store: Arc<dyn TaskHubStore>) {
    let hub = TaskHub::open(store, fast_settings()).await.unwrap();
    let worker = Worker::start(&hub, countdown_registry()).await.unwrap();
    let client = hub.client();
    let start = |id: &'static str, t: Tags| start_countdown(&client, id, t);
    start("pay-eu", tags(&[("team", "payments"), ("region", "eu")]))
        .await
        .unwrap();
    start("pay-us", tags(&[("team", "payments"), ("region", "us")]))
        .await
        .unwrap();
    start("untagged", Tags::new()).await.unwrap();
    for id in ["pay-eu", "pay-us", "untagged"] {
        let st = client
            .wait_for_completion(&InstanceId::new(id).unwrap(), STUCK)
            .await
            .unwrap();
        assert_eq!(st.status(), OrchestrationStatus::Completed, "{id}");
        assert_eq!(st.output::<u32>().unwrap(), Some(300));
    }
    // Three continue-as-new later, the last execution's row still carries the start's tags.
    let row = row_of(&client, &InstanceId::new("pay-eu").unwrap()).await;
    assert_eq!(row.tags, tags(&[("team", "payments"), ("region", "eu")]));

    let listed = |t: Tags| {
        let client = client.clone();
        async move {
            let page = client
                .list(&InstanceQuery {
                    tags: t,
                    ..InstanceQuery::default()
                })
                .await
                .unwrap();
            page.instances
                .iter()
                .map(|r| r.instance_id.to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        listed(tags(&[("team", "payments")])).await,
        ["pay-eu", "pay-us"]
    );
    assert_eq!(
        listed(tags(&[("team", "payments"), ("region", "us")])).await,
        ["pay-us"]
    );
    assert!(listed(tags(&[("team", "ops")])).await.is_empty());

    // A restart keeps the tags.
    client
        .restart(&InstanceId::new("pay-us").unwrap(), false)
        .await
        .unwrap();
    let st = client
        .wait_for_completion(&InstanceId::new("pay-us").unwrap(), STUCK)
        .await
        .unwrap();
    assert_eq!(st.row.tags["region"], "us");

    // Bad tags: a typed error, and nothing is created.
    for bad in [
        tags(&[("has space", "x")]),
        tags(&[("k", "line\nbreak")]),
        (0..33).map(|i| (format!("k{i}"), String::new())).collect(),
    ] {
        let err = start("bad-tags", bad).await.unwrap_err();
        assert!(matches!(err, TaskhubError::InvalidTag { .. }), "{err}");
    }
    assert!(!exists(&client, &InstanceId::new("bad-tags").unwrap()).await);
    worker.shutdown().await;
}

memory_and_sqlite!(
    tags_survive_and_filter, "tags":
    tags_on_memory,
    tags_on_sqlite,
);

/// The caps are the hub's settings: a hub with lower caps refuses a start over one, naming its
/// setting, and starts nothing; raised caps let through what the defaults refuse; caps past
/// what every backend can store are refused when the hub opens, naming the bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tag_caps_are_the_hubs_settings() {
    let dir = TempDir::new("tag-caps");
    let store = sqlite_store(&dir.0);
    let settings = Settings {
        max_tags: 2,
        max_tag_key_chars: 100,
        max_tag_value_chars: 8,
        ..fast_settings()
    };
    let hub = TaskHub::open(Arc::clone(&store), settings.clone())
        .await
        .unwrap();
    let client = hub.client();
    assert_eq!(client.tag_caps(), settings.tag_caps());
    let start = |id: &'static str, t: Tags| start_countdown(&client, id, t);
    for (bad, setting) in [
        (
            tags(&[("a", ""), ("b", ""), ("c", "")]),
            "3 tags, more than 2 (max_tags)",
        ),
        (
            tags(&[("a", "123456789")]),
            "longer than 8 characters (max_tag_value_chars)",
        ),
        (
            [("k".repeat(101), String::new())].into_iter().collect(),
            "longer than 100 characters (max_tag_key_chars)",
        ),
    ] {
        let err = start("over-a-cap", bad).await.unwrap_err();
        assert!(
            matches!(&err, TaskhubError::InvalidTag { reason, .. } if reason.contains(setting)),
            "{err}"
        );
    }
    assert!(!exists(&client, &InstanceId::new("over-a-cap").unwrap()).await);
    // A key of 100 characters: over the default cap (64), within this hub's.
    start(
        "long-key",
        [("k".repeat(100), "12345678".to_owned())]
            .into_iter()
            .collect(),
    )
    .await
    .unwrap();
    let row = row_of(&client, &InstanceId::new("long-key").unwrap()).await;
    assert_eq!(row.tags[&"k".repeat(100)], "12345678");
    drop(hub);

    // Past a bound: refused at open, naming the setting and the bound.
    for (name, value, bound) in [
        ("max_tags", "201", "at most 200"),
        ("max_tag_key_chars", "126", "1 to 125"),
        ("max_tag_value_chars", "16385", "at most 16384"),
    ] {
        let mut settings = fast_settings();
        settings.set(name, value).unwrap();
        match TaskHub::open(Arc::clone(&store), settings).await {
            Err(TaskhubError::InvalidSetting { name: got, reason }) => {
                assert_eq!(got, name);
                assert!(reason.contains(bound), "{name}: {reason}");
            }
            Err(other) => panic!("{name}: {other}"),
            Ok(_) => panic!("{name} = {value} was accepted"),
        }
    }
}
