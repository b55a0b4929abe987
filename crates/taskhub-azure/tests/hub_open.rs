//! Opening a hub: `open` on a missing hub creates nothing and names the hub and the setting;
//! names that differ only in case are one hub, and the other case is refused; a hub deleted
//! and re-created at once works (names still being deleted are waited for); an endpoint that
//! never answers fails within seconds. Run with Azurite:
//! `scripts/with-azurite.sh cargo test -p taskhub-azure --test hub_open`.

#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

mod common;
mod loopback;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loopback::{storage_answer, Server};
use taskhub_azure::{AzureError, AzureOptions, AzureStore, HubName, StorageAccount};
use taskhub_core::Timestamp;
use taskhub_storage::{
    ManualClock, NewQueueMessage, PartitionStore, QueueName, QueueStore, StorageError,
};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);
const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

fn options(account: StorageAccount, hub: &HubName) -> AzureOptions {
    AzureOptions {
        account,
        hub: hub.clone(),
        clock: Arc::new(ManualClock::new(START)),
    }
}

fn local_account(port: u16) -> StorageAccount {
    let base = format!("http://127.0.0.1:{port}/devstoreaccount1");
    StorageAccount::from_connection_string(&format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={KEY};\
         BlobEndpoint={base};QueueEndpoint={base};TableEndpoint={base}"
    ))
    .unwrap()
}

/// A store on another hub, to list the account with.
async fn lister() -> AzureStore {
    AzureStore::create(options(common::account(), &common::unique_hub()))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_missing_hub_is_one_typed_error_and_creates_nothing() {
    let lister = lister().await;
    let before = lister.account_objects().await.unwrap();
    let hub = common::unique_hub();
    let err = AzureStore::open(options(common::account(), &hub))
        .await
        .expect_err("the hub does not exist");
    assert!(
        matches!(&err, AzureError::HubNotFound { name } if name == hub.as_str()),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(hub.as_str()) && text.contains("task_hub_name"),
        "{text}"
    );
    assert!(!err.is_retryable());
    assert_eq!(
        lister.account_objects().await.unwrap(),
        before,
        "opening a missing hub must leave the account untouched"
    );

    // The explicit create path makes it; then `open` finds it.
    let created = AzureStore::create(options(common::account(), &hub))
        .await
        .unwrap();
    created.create_hub(1, START).await.unwrap();
    let after = lister.account_objects().await.unwrap();
    assert!(after.tables.contains(&format!("{}History", hub.as_str())));
    assert!(after
        .containers
        .contains(&format!("{}-largemessages", hub.lower())));
    let opened = AzureStore::open(options(common::account(), &hub))
        .await
        .unwrap();
    assert_eq!(opened.hub_info().await.unwrap().unwrap().partition_count, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hub_names_that_differ_only_in_case_are_refused() {
    let lister = lister().await;
    let unique = common::unique_hub();
    let id = &unique.as_str()[1..];
    let upper = HubName::new(&format!("Orders{id}")).unwrap();
    let lower = HubName::new(&format!("orders{id}")).unwrap();
    let orders = AzureStore::create(options(common::account(), &upper))
        .await
        .unwrap();
    orders.create_hub(2, START).await.unwrap();
    let before = lister.account_objects().await.unwrap();

    for create in [false, true] {
        let opts = options(common::account(), &lower);
        let result = if create {
            AzureStore::create(opts).await
        } else {
            AzureStore::open(opts).await
        };
        let err = result.expect_err("another case of an existing hub's name");
        assert!(
            matches!(&err, AzureError::HubNameCase { name, existing }
                if name == lower.as_str() && existing == upper.as_str()),
            "create={create}: {err:?}"
        );
        assert!(err.to_string().contains("task_hub_name"), "{err}");
    }
    assert_eq!(
        lister.account_objects().await.unwrap(),
        before,
        "a refused name creates nothing"
    );
    // The name as created still opens.
    let again = AzureStore::open(options(common::account(), &upper))
        .await
        .unwrap();
    assert_eq!(again.hub_info().await.unwrap().unwrap().partition_count, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_deleted_and_created_again_at_once_works() {
    let hub = common::unique_hub();
    let s = AzureStore::create(options(common::account(), &hub))
        .await
        .unwrap();
    s.create_hub(2, START).await.unwrap();
    s.enqueue(
        QueueName::Control(1),
        vec![NewQueueMessage {
            body: "old".to_owned(),
            delay: Duration::ZERO,
        }],
    )
    .await
    .unwrap();
    s.delete_hub().await.unwrap();
    assert!(matches!(
        AzureStore::open(options(common::account(), &hub)).await,
        Err(AzureError::HubNotFound { .. })
    ));

    let again = AzureStore::create(options(common::account(), &hub))
        .await
        .unwrap();
    assert!(again.hub_info().await.unwrap().is_none());
    again.create_hub(4, START).await.unwrap();
    again
        .enqueue(
            QueueName::Control(1),
            vec![NewQueueMessage {
                body: "new".to_owned(),
                delay: Duration::ZERO,
            }],
        )
        .await
        .unwrap();
    let got = again
        .dequeue(QueueName::Control(1), 32, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        got.iter().map(|d| d.body.as_str()).collect::<Vec<_>>(),
        ["new"]
    );
}

/// Real Azure Storage answers 409 TableBeingDeleted (QueueBeingDeleted,
/// ContainerBeingDeleted) while a deleted name is still held: that is not "already exists";
/// creation is retried until the name is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_still_being_deleted_is_retried_not_taken_as_existing() {
    let refusals = Arc::new(AtomicU32::new(0));
    let seen = refusals.clone();
    let server = Server::plain(move |r| {
        let code = if r.method == "POST" && r.target.ends_with("/Tables") {
            "TableBeingDeleted"
        } else if r.method == "PUT" && r.target.contains("restype=container") {
            "ContainerBeingDeleted"
        } else if r.method == "PUT" {
            "QueueBeingDeleted"
        } else {
            return storage_answer(r);
        };
        // Each object is refused twice, then created.
        let key = format!("{} {} {}", r.method, r.target, r.body);
        let n = REFUSED.with_key(&key);
        if n < 2 {
            seen.fetch_add(1, Ordering::SeqCst);
            (
                409,
                vec![("x-ms-error-code".to_owned(), code.to_owned())],
                String::new(),
            )
        } else {
            storage_answer(r)
        }
    })
    .await;
    let store = AzureStore::create(options(
        local_account(server.port),
        &HubName::new("Deleted1").unwrap(),
    ))
    .await
    .expect("creation waits until the names are free");
    // Four tables and the container, each refused twice.
    assert_eq!(refusals.load(Ordering::SeqCst), 10);
    let creates = |pred: &dyn Fn(&loopback::Recorded) -> bool| {
        server.seen().iter().filter(|r| pred(r)).count()
    };
    assert_eq!(
        creates(&|r| r.method == "POST" && r.target.ends_with("/Tables")),
        12
    );
    assert_eq!(
        creates(&|r| r.method == "PUT" && r.target.contains("restype=container")),
        3
    );
    let _ = store;
}

/// Counts per key across the handler's calls.
struct Refused(std::sync::Mutex<std::collections::HashMap<String, u32>>);

impl Refused {
    fn with_key(&self, key: &str) -> u32 {
        let mut map = self.0.lock().unwrap();
        let n = map.entry(key.to_owned()).or_insert(0);
        *n += 1;
        *n - 1
    }
}

static REFUSED: std::sync::LazyLock<Refused> =
    std::sync::LazyLock::new(|| Refused(std::sync::Mutex::new(std::collections::HashMap::new())));

/// A listener that never accepts: the kernel completes the handshake, and then nothing ever
/// answers. Opening fails within seconds (not after minutes of retries).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_never_answers_fails_within_seconds() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let err = tokio::time::timeout(
        Duration::from_secs(60),
        AzureStore::open(options(
            local_account(port),
            &HubName::new("Silent1").unwrap(),
        )),
    )
    .await
    .expect("opening must give up well before a minute")
    .expect_err("nothing answers");
    assert!(
        matches!(&err, AzureError::Open(StorageError::Unavailable(m)) if m.contains(&port.to_string())),
        "{err:?}"
    );
    eprintln!("gave up after {:?}", started.elapsed());
    drop(silent);
}

/// A listener whose accept queue is full: the kernel drops further SYNs, as a firewall that
/// drops packets does. The connection attempt gives up after the connect timeout (5 s), and
/// opening reports it within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_drops_connection_attempts_fails_within_seconds() {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    // Fill the accept queue (never accepted) until a connection attempt hangs.
    let mut held = Vec::new();
    loop {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
            Ok(stream) => held.push(stream),
            Err(_) => break,
        }
        assert!(held.len() < 64, "the accept queue never filled");
    }
    let started = Instant::now();
    let err = tokio::time::timeout(
        Duration::from_secs(60),
        AzureStore::open(options(
            local_account(addr.port()),
            &HubName::new("Dropped1").unwrap(),
        )),
    )
    .await
    .expect("opening must give up well before a minute")
    .expect_err("no connection is ever made");
    let text = err.to_string();
    assert!(
        matches!(&err, AzureError::Open(StorageError::Unavailable(_))),
        "{err:?}"
    );
    assert!(text.contains(&addr.port().to_string()), "{text}");
    // Each attempt ended at the connect timeout, not at the attempt's own time limit.
    assert!(text.contains("tcp connect error"), "{text}");
    eprintln!("gave up after {:?}: {text}", started.elapsed());
    drop((held, listener));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_layout_is_named_as_a_newer_build_and_an_older_one_is_brought_up() {
    use taskhub_storage::{ProcessAnnouncement, ProcessKind, ProcessStore};
    let hub = common::unique_hub();
    let store = AzureStore::create(options(common::account(), &hub))
        .await
        .unwrap();
    store.create_hub(2, START).await.unwrap();
    let supported = taskhub_azure::AZURE_LAYOUT_VERSION;
    assert_eq!(store.stored_schema().await.unwrap(), supported);
    store
        .announce_process(&ProcessAnnouncement {
            id: "serve-1".into(),
            kind: ProcessKind::Serve,
            host: "box".into(),
            pid: 9,
            build_version: "0.1.0".into(),
        })
        .await
        .unwrap();

    // A newer build migrated the hub: opening names it; the running process hears of it
    // at its next heartbeat; changing the hub's info keeps the newer layout.
    store.set_stored_layout(Some(supported + 1)).await.unwrap();
    let err = AzureStore::open(options(common::account(), &hub))
        .await
        .expect_err("a newer layout is refused");
    let text = err.to_string();
    assert!(
        matches!(&err, AzureError::Open(StorageError::NewerSchema { found, .. }) if *found == supported + 1),
        "{err:?}"
    );
    assert!(
        text.contains("written by a newer build") && text.contains(hub.as_str()),
        "{text}"
    );
    assert!(!text.contains("corrupt"), "{text}");
    let beat = store.heartbeat_process("serve-1").await.unwrap_err();
    assert!(matches!(beat, StorageError::NewerSchema { .. }), "{beat:?}");
    store
        .set_prohibited_workers(vec!["w".into()])
        .await
        .unwrap();
    assert_eq!(store.stored_schema().await.unwrap(), supported + 1);

    // A build from before layout versions rewrote the info row without the property: the
    // next opener brings it to this build's layout (1 to 2 only adds the registry).
    store.set_stored_layout(None).await.unwrap();
    assert_eq!(store.stored_schema().await.unwrap(), 1);
    let reopened = AzureStore::open(options(common::account(), &hub))
        .await
        .unwrap();
    assert_eq!(reopened.stored_schema().await.unwrap(), supported);
    assert_eq!(
        reopened
            .hub_info()
            .await
            .unwrap()
            .unwrap()
            .prohibited_workers,
        vec!["w".to_owned()],
        "the rewrite kept the hub's info"
    );
    reopened.heartbeat_process("serve-1").await.unwrap();
}
