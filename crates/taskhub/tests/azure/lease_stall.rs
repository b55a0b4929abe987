//! A worker keeps its leases through a lease request that hangs (issue 20, item 5), on
//! Azurite: a loopback proxy between the store and Azurite holds, for ever, the next read of
//! the partitions table and the next renewal batch. Each lease call fails within
//! `LEASE_REQUEST_TIMEOUT` (it used to wait 30 s an attempt, longer than a lease), the
//! renewal is redone row by row, and the worker renews every partition in time: it loses
//! none, and no pass of its lease loop takes longer than two bounded calls.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backends;
use crate::proxy::{authority, Proxy};
use taskhub::lease::{LeaseConfig, LeaseManager, PartitionHost, Released};
use taskhub_azure::{AzureOptions, AzureStore, HubName, LEASE_REQUEST_TIMEOUT};
use taskhub_storage::{Clock, PartitionStore, SystemClock};

const PARTITIONS: u32 = 4;
const LEASE: Duration = Duration::from_secs(8);

#[derive(Default)]
struct Host {
    held: Vec<u32>,
    released: Vec<(u32, Released)>,
}

impl PartitionHost for Host {
    fn acquired(&mut self, partition: u32, _: u64) {
        self.held.push(partition);
    }
    fn stop_dequeuing(&mut self, _: u32) {}
    fn in_flight(&self, _: u32) -> usize {
        0
    }
    fn released(&mut self, partition: u32, why: Released) {
        self.held.retain(|p| *p != partition);
        self.released.push((partition, why));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_lease_request_costs_the_worker_none_of_its_leases() {
    let mut account = backends::azure_account();
    let proxy = Proxy::start(authority(&account.table_endpoint)).await;
    account.table_endpoint = proxy.endpoint(&account.table_endpoint);
    let clock = Arc::new(SystemClock::new());
    let store = Arc::new(
        AzureStore::create(AzureOptions {
            account,
            hub: HubName::new(&backends::unique_hub_name()).unwrap(),
            clock: clock.clone(),
        })
        .await
        .unwrap(),
    );
    store.create_hub(PARTITIONS, clock.now()).await.unwrap();
    let config = LeaseConfig {
        worker: "w".to_owned(),
        lease_interval: LEASE,
        renew_interval: Duration::from_secs(2),
        acquire_interval: Duration::from_secs(2),
        max_partitions: 16,
        drain_timeout: Duration::from_secs(2),
    };
    let mut manager = LeaseManager::new(store.clone(), clock.clone(), config);
    let mut host = Host::default();
    let claiming = Instant::now();
    while host.held.len() < PARTITIONS as usize {
        assert!(claiming.elapsed() < Duration::from_secs(30), "no claim");
        let wait = manager.tick(&mut host).await;
        tokio::time::sleep(wait).await;
    }
    let held = manager.snapshot().held;

    // The next read of the partitions table and the next renewal batch hang.
    proxy.stall(1, |r| {
        r.method == "GET" && r.target.contains("Partitions()")
    });
    proxy.stall(1, |r| {
        r.method == "POST" && r.target.ends_with("$batch") && r.body.contains("Partitions(")
    });
    let stalled_at = clock.now();
    let mut passes: BTreeMap<u64, Duration> = BTreeMap::new();
    let watching = Instant::now();
    while watching.elapsed() < LEASE * 3 {
        let started = Instant::now();
        let wait = manager.tick(&mut host).await;
        passes.insert(watching.elapsed().as_millis() as u64, started.elapsed());
        tokio::time::sleep(wait).await;
    }

    let stalled = proxy.seen().iter().filter(|r| r.stalled).count();
    assert_eq!(stalled, 2, "the proxy did not hold a read and a batch");
    assert!(
        host.released.is_empty(),
        "the worker lost leases: {:?}",
        host.released
    );
    assert_eq!(manager.snapshot().held, held);
    let slowest = passes.values().max().copied().unwrap_or_default();
    assert!(
        slowest < LEASE_REQUEST_TIMEOUT * 2 + Duration::from_millis(1_500),
        "a pass of the lease loop took {slowest:?}"
    );
    // Every row is still this worker's, same epoch, and was renewed after the stall.
    for row in store.list_partitions().await.unwrap() {
        assert_eq!(row.owner.as_deref(), Some("w"));
        assert_eq!(Some(&row.epoch), held.get(&row.partition));
        assert!(
            row.updated_at > stalled_at,
            "partition {} not renewed",
            row.partition
        );
    }
}
