//! The writer thread: owns the write connection and group-commits.
//!
//! Every write (enqueue, dequeue, delete, checkpoint, row writes...) is a job sent over a
//! channel. The writer takes the first job, drains whatever else is already queued (up to
//! `max_batch`), and applies them all in ONE `BEGIN IMMEDIATE` transaction. A job that fails
//! (say, an ETag conflict) gets its own error and leaves nothing behind, while the others
//! commit: the batch runs without savepoints first and, only if a job failed, again with one
//! `SAVEPOINT` per job (see `apply.rs`). After the single `COMMIT` every caller is answered
//! through its oneshot channel. With `synchronous = FULL` that is one fsync for the whole batch.
//!
//! A *relaxed* write (a dequeue: it only hides messages and counts a delivery) does not need
//! to survive a power loss: losing it makes the messages visible again, which at-least-once
//! delivery allows. Under `FULL`, a batch of relaxed writes only commits with
//! `synchronous = NORMAL` (no fsync); the next synced commit syncs the WAL up to and including
//! it, so what survives a power loss is always a prefix of the commits. A batch that holds both
//! commits its relaxed writes first, in a transaction of their own, and answers them before the
//! synced rest waits for the disk: a poller's dequeue (a timer firing) does not wait for other
//! instances' fsyncs.
//!
//! *Inline writes.* Under `NORMAL` durability (a commit does not wait for the disk), a write
//! that finds nothing queued and the writer thread idle runs on the caller's thread instead:
//! the hand-over to the thread and back costs more than a small transaction. Only while writes
//! come one at a time, though (the thread's last batch held one write): concurrent writes are
//! cheaper group-committed, each commit writing the pages they share once (after a batch of
//! several, the thread's next few batches must hold one write each before writes run inline
//! again: see `INLINE_AFTER_SINGLE_BATCHES`). It takes the write
//! lock with no busy timeout, so it never waits on the caller's (async) thread: if another
//! process holds the lock, the write is queued for the writer thread after all, which waits
//! with the busy timeout. Under load the thread is busy, writes queue up, and group commit
//! takes over.

use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;
use taskhub_storage::{Clock, StorageError, StorageResult};
use tokio::sync::oneshot;

use self::apply::{apply_and_commit, begin};
use self::job::{Job, TypedJob};
use crate::checkpointer::{self, Checkpointer, WRITER_CHECKPOINTS_AFTER_PAGES};
use crate::errors::SqlResultExt;
use crate::options::Durability;

mod apply;
mod job;

pub(crate) use apply::Tx;

/// Counters of the writer, to observe group commit.
#[derive(Debug, Default)]
struct Counters {
    transactions: AtomicU64,
    requests: AtomicU64,
    inline: AtomicU64,
}

impl Counters {
    fn count(&self, requests: usize, committed: bool) {
        if committed {
            self.transactions.fetch_add(1, Ordering::Relaxed);
        }
        self.requests.fetch_add(
            u64::try_from(requests).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }
}

/// A snapshot of the writer's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriterStats {
    /// Write transactions committed (each holds one or more requests).
    pub transactions: u64,
    /// Write requests applied (committed, or rolled back alone when they failed).
    pub requests: u64,
    /// Of those, the requests that ran on their caller's thread (see the module docs).
    pub inline_requests: u64,
    /// WAL checkpoints run by the checkpointer thread (see the crate docs).
    pub wal_checkpoints: u64,
}

/// The write connection and its sync state.
struct WriteConn {
    conn: Connection,
    /// Whether the connection is switched to `synchronous = NORMAL` for a relaxed batch.
    unsynced: bool,
}

/// Writes run inline again only after this many of the thread's batches in a row held one
/// write. One was not enough: with writes arriving close together but not at once (each after
/// a network round trip, as an SDK worker's answers), an inline write holds the connection
/// while the next arrive, they go to the thread as one batch, its next batch holds one, and
/// the following writes ran inline again, each in a transaction of its own: over gRPC a
/// third of the checkpoints ran so, in more than twice the transactions (`taskhub-bench grpc`,
/// `sqlite_write_transactions`).
const INLINE_AFTER_SINGLE_BATCHES: usize = 4;

/// What the handle and the writer thread share.
struct Shared {
    conn: Mutex<WriteConn>,
    /// Jobs sent to the thread and not yet taken by it.
    queued: AtomicUsize,
    /// How many of the thread's last batches in a row held one write (at most
    /// [`INLINE_AFTER_SINGLE_BATCHES`]; a batch of more resets it): a batch of more means
    /// writes are arriving concurrently, and they are cheaper group-committed than each in its
    /// own transaction.
    single_batches: AtomicUsize,
    /// The WAL's size (pages) after the last commit.
    wal_pages: Arc<AtomicI32>,
    counters: Counters,
    clock: Arc<dyn Clock>,
    durability: Durability,
    busy_timeout: Duration,
    max_batch: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, WriteConn> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection, if nobody is using it and nothing is queued for the thread.
    fn idle(&self) -> Option<MutexGuard<'_, WriteConn>> {
        if self.durability != Durability::Normal
            || self.queued.load(Ordering::SeqCst) != 0
            || self.single_batches.load(Ordering::Relaxed) < INLINE_AFTER_SINGLE_BATCHES
            || self.wal_pages.load(Ordering::Relaxed) >= WRITER_CHECKPOINTS_AFTER_PAGES - 1_000
        {
            return None;
        }
        match self.conn.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

/// The handle to the writer thread.
pub(crate) struct Writer {
    shared: Arc<Shared>,
    sender: Option<Sender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
    /// Checkpoints the WAL the writer fills; dropped after the writer thread has ended.
    checkpointer: Checkpointer,
}

/// What the writer needs.
pub(crate) struct WriterSetup {
    /// The write connection (already migrated).
    pub(crate) conn: Connection,
    /// The store's clock.
    pub(crate) clock: Arc<dyn Clock>,
    /// Most jobs per transaction.
    pub(crate) max_batch: usize,
    /// Thread name.
    pub(crate) name: String,
    /// The connection's sync policy.
    pub(crate) durability: Durability,
    /// How long the writer thread waits for a lock another process holds.
    pub(crate) busy_timeout: Duration,
    /// The connection the WAL checkpoints run on.
    pub(crate) checkpoint_conn: Connection,
}

/// The outcome of trying a write on the caller's thread.
enum Inline<T, F> {
    /// It ran: the answer.
    Done(StorageResult<T>),
    /// Another process holds the write lock: the work, for the writer thread.
    Busy(F),
}

impl Writer {
    /// Starts the writer thread (and the checkpointer thread).
    pub(crate) fn start(mut setup: WriterSetup) -> StorageResult<Self> {
        let checkpointer = Checkpointer::start(setup.checkpoint_conn)?;
        let wal_pages = Arc::new(AtomicI32::new(0));
        checkpointer.watch(&mut setup.conn, Arc::clone(&wal_pages))?;
        let shared = Arc::new(Shared {
            conn: Mutex::new(WriteConn {
                conn: setup.conn,
                unsynced: false,
            }),
            queued: AtomicUsize::new(0),
            // A fresh writer has seen no concurrency: its first write may run inline.
            single_batches: AtomicUsize::new(INLINE_AFTER_SINGLE_BATCHES),
            wal_pages,
            counters: Counters::default(),
            clock: setup.clock,
            durability: setup.durability,
            busy_timeout: setup.busy_timeout,
            max_batch: setup.max_batch.max(1),
        });
        let (sender, receiver) = mpsc::channel::<Box<dyn Job>>();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(setup.name)
            .spawn(move || run(&thread_shared, &receiver))
            .map_err(|e| {
                StorageError::Unavailable(format!("cannot start the writer thread: {e}"))
            })?;
        Ok(Self {
            shared,
            sender: Some(sender),
            thread: Some(thread),
            checkpointer,
        })
    }

    /// Runs a write and waits for its commit: on the caller's thread if the writer is idle,
    /// else in the writer thread's next batch. `relaxed` writes may commit without an fsync
    /// (see the module docs).
    pub(crate) async fn write<T, F>(&self, relaxed: bool, work: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: Fn(&Tx<'_>) -> StorageResult<T> + Send + 'static,
    {
        let work = match self.shared.idle() {
            Some(mut conn) => match inline(&self.shared, &mut conn, relaxed, work) {
                Inline::Done(answer) => return answer,
                Inline::Busy(work) => work,
            },
            None => work,
        };
        let (reply, answer) = oneshot::channel();
        let job = Box::new(TypedJob {
            relaxed,
            work,
            result: None,
            reply: Some(reply),
        });
        let sender = self.sender.as_ref().ok_or_else(stopped)?;
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        if sender.send(job).is_err() {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(stopped());
        }
        let (answer, work) = answer.await.map_err(|_| stopped())?;
        drop(work);
        answer
    }

    /// The counters so far.
    pub(crate) fn stats(&self) -> WriterStats {
        let c = &self.shared.counters;
        WriterStats {
            transactions: c.transactions.load(Ordering::Relaxed),
            requests: c.requests.load(Ordering::Relaxed),
            inline_requests: c.inline.load(Ordering::Relaxed),
            wal_checkpoints: self.checkpointer.checkpoints(),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel ends the thread after the batch in hand.
        self.sender = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn stopped() -> StorageError {
    StorageError::Unavailable("the sqlite writer thread has stopped".into())
}

/// Runs one write on the caller's thread, in a transaction of its own.
fn inline<T, F>(shared: &Shared, conn: &mut WriteConn, relaxed: bool, work: F) -> Inline<T, F>
where
    T: Send,
    F: Fn(&Tx<'_>) -> StorageResult<T> + Send,
{
    let c = &conn.conn;
    // Take the write lock without waiting; put the busy timeout back before anything runs.
    let begun = c
        .busy_timeout(Duration::ZERO)
        .ctx("write transaction")
        .and_then(|()| begin(c));
    if let Err(e) = c.busy_timeout(shared.busy_timeout).ctx("write transaction") {
        if !c.is_autocommit() {
            let _ = crate::schema::exec_cached(c, "ROLLBACK");
        }
        return Inline::Done(Err(e));
    }
    match begun {
        Ok(()) => {}
        Err(StorageError::Busy { .. }) => return Inline::Busy(work),
        Err(e) => return Inline::Done(Err(e)),
    }
    let mut job = TypedJob {
        relaxed,
        work,
        result: None,
        reply: None,
    };
    let outcome = apply_and_commit(c, shared.clock.as_ref(), &mut [&mut job]);
    shared.counters.count(1, outcome == Ok(true));
    shared.counters.inline.fetch_add(1, Ordering::Relaxed);
    Inline::Done(job.answer(outcome.map(drop)))
}

fn run(shared: &Shared, receiver: &Receiver<Box<dyn Job>>) {
    checkpointer::on_writer_thread();
    while let Ok(first) = receiver.recv() {
        let mut batch = vec![first];
        while batch.len() < shared.max_batch {
            match receiver.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        // Only once the thread holds the connection do its jobs stop counting as queued: until
        // then no write may start on a caller's thread, so a stream of those cannot keep the
        // thread (and the batch it holds) waiting.
        let conn = shared.lock();
        shared.queued.fetch_sub(batch.len(), Ordering::SeqCst);
        let singles = if batch.len() > 1 {
            0
        } else {
            (shared.single_batches.load(Ordering::Relaxed) + 1).min(INLINE_AFTER_SINGLE_BATCHES)
        };
        shared.single_batches.store(singles, Ordering::Relaxed);
        commit_drained(shared, conn, batch);
    }
}

/// Commits a batch the thread drained, on the connection it holds, and answers its callers.
/// Under `FULL`, the relaxed writes of a mixed batch commit first, in a transaction of their
/// own without an fsync, and are answered before the synced rest waits for the disk: a dequeue
/// (a timer firing, say) does not wait for other instances' fsyncs. The requests of one batch
/// were all in flight together, so any order is theirs.
fn commit_drained(shared: &Shared, mut conn: MutexGuard<'_, WriteConn>, batch: Vec<Box<dyn Job>>) {
    let (relaxed, synced): (Vec<_>, Vec<_>) = if shared.durability == Durability::Full {
        batch.into_iter().partition(|j| j.relaxed())
    } else {
        (Vec::new(), batch)
    };
    let last = if synced.is_empty() {
        relaxed
    } else {
        if !relaxed.is_empty() {
            answer(commit(shared, &mut conn, relaxed));
        }
        synced
    };
    let done = commit(shared, &mut conn, last);
    drop(conn);
    answer(done);
}

/// A committed (or failed) batch, to answer.
type Done = (Vec<Box<dyn Job>>, Result<(), StorageError>);

/// Applies `batch` in one transaction and commits it.
fn commit(shared: &Shared, conn: &mut WriteConn, mut batch: Vec<Box<dyn Job>>) -> Done {
    set_sync(shared.durability, conn, &batch);
    let mut jobs: Vec<&mut dyn Job> = batch.iter_mut().map(|j| &mut **j as &mut dyn Job).collect();
    let outcome = begin(&conn.conn)
        .and_then(|()| apply_and_commit(&conn.conn, shared.clock.as_ref(), &mut jobs));
    shared.counters.count(batch.len(), outcome == Ok(true));
    (batch, outcome.map(drop))
}

/// Answers each caller of a batch.
fn answer((batch, outcome): Done) {
    for job in batch {
        job.finish(outcome.clone());
    }
}

/// Under `FULL`, switches the connection to `synchronous = NORMAL` for a batch of only relaxed
/// writes, and back for any other batch.
fn set_sync(durability: Durability, conn: &mut WriteConn, batch: &[Box<dyn Job>]) {
    let relax = durability == Durability::Full && batch.iter().all(|j| j.relaxed());
    if relax == conn.unsynced {
        return;
    }
    let level = if relax {
        Durability::Normal
    } else {
        durability
    };
    // If the switch fails the batch simply commits with the current setting.
    if conn
        .conn
        .pragma_update(None, "synchronous", level.pragma_value())
        .is_ok()
    {
        conn.unsynced = relax;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]

    use taskhub_storage::SystemClock;

    use super::*;
    use crate::schema::{connect, migrate, Role};

    fn writer(path: &std::path::Path) -> Writer {
        writer_with(path, Durability::Normal)
    }

    fn writer_with(path: &std::path::Path, durability: Durability) -> Writer {
        let open = || connect(path, Role::Writer, durability, Duration::from_secs(1));
        let conn = open().unwrap();
        migrate(
            &conn,
            path,
            Duration::from_secs(1),
            taskhub_core::Timestamp::from_millis(0),
        )
        .unwrap();
        Writer::start(WriterSetup {
            conn,
            clock: Arc::new(SystemClock::new()),
            max_batch: 64,
            name: "test-writer".into(),
            durability,
            busy_timeout: Duration::from_secs(1),
            checkpoint_conn: open().unwrap(),
        })
        .unwrap()
    }

    fn insert(tx: &Tx<'_>) -> StorageResult<()> {
        tx.conn
            .execute(
                "INSERT INTO payloads (instance_id, name, data) VALUES ('i', hex(randomblob(8)), x'00')",
                [],
            )
            .ctx("insert")
            .map(drop)
    }

    /// Inserts a payload row named `name`.
    fn insert_named(name: &'static str) -> impl Fn(&Tx<'_>) -> StorageResult<()> + Send {
        move |tx| {
            tx.conn
                .execute(
                    "INSERT INTO payloads (instance_id, name, data) VALUES ('i', ?1, x'00')",
                    [name],
                )
                .ctx("insert")
                .map(drop)
        }
    }

    /// Under `FULL`, the relaxed writes of a batch commit before its synced ones, in a
    /// transaction of their own (no fsync to wait for): drained after a synced write, a relaxed
    /// one still lands first, and the batch takes two transactions.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn under_full_a_batchs_relaxed_writes_commit_first_on_their_own() {
        let path = std::env::temp_dir().join(format!("taskhub-split-{}.db", std::process::id()));
        let writer = Arc::new(writer_with(&path, Durability::Full));
        let job = |name: &'static str, relaxed: bool| {
            let (reply, answer) = oneshot::channel();
            let job: Box<dyn Job> = Box::new(TypedJob {
                relaxed,
                work: insert_named(name),
                result: None,
                reply: Some(reply),
            });
            (job, answer)
        };
        let (synced, synced_answer) = job("synced", false);
        let (relaxed, relaxed_answer) = job("relaxed", true);
        let before = writer.stats().transactions;
        // As the writer thread does with a batch it drained, in the order it was queued.
        commit_drained(&writer.shared, writer.shared.lock(), vec![synced, relaxed]);
        synced_answer.await.unwrap().0.unwrap();
        relaxed_answer.await.unwrap().0.unwrap();
        assert_eq!(writer.stats().transactions - before, 2, "relaxed; synced");
        let order: Vec<String> = writer
            .write(false, |tx| {
                let mut stmt = tx
                    .conn
                    .prepare("SELECT name FROM payloads ORDER BY rowid")
                    .ctx("select")?;
                let names = stmt
                    .query_map([], |r| r.get(0))
                    .ctx("select")?
                    .collect::<Result<Vec<String>, _>>()
                    .ctx("select")?;
                Ok(names)
            })
            .await
            .unwrap();
        assert_eq!(order, ["relaxed", "synced"]);
        drop(writer);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    /// After the thread group-commits several writes, writes run inline again only once
    /// `INLINE_AFTER_SINGLE_BATCHES` of its batches in a row held one write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[allow(
        clippy::await_holding_lock,
        reason = "the held connection keeps the writer thread waiting; the writes only try it"
    )]
    async fn writes_run_inline_again_only_after_several_single_batches() {
        let path = std::env::temp_dir().join(format!("taskhub-singles-{}.db", std::process::id()));
        let writer = Arc::new(writer(&path));
        let inline = |w: &Writer| w.stats().inline_requests;
        // A fresh writer runs a lone write inline.
        writer.write(false, insert).await.unwrap();
        assert_eq!(inline(&writer), 1);
        // Holding the connection, four writes queue for the thread: it takes one or more
        // (then waits for the connection), then the rest as one batch: at least one of its
        // batches holds several, and at most the last one holds one.
        let held = writer.shared.lock();
        let mut writes = Vec::new();
        for _ in 0..4 {
            let w = Arc::clone(&writer);
            writes.push(tokio::spawn(async move { w.write(false, insert).await }));
        }
        while writer.shared.queued.load(Ordering::SeqCst) < 4 {
            tokio::task::yield_now().await;
        }
        drop(held);
        for w in writes {
            w.await.unwrap().unwrap();
        }
        assert_eq!(inline(&writer), 1);
        assert!(writer.shared.single_batches.load(Ordering::SeqCst) <= 1);
        // Lone writes now go to the thread until enough of its batches in a row held one.
        let mut queued = 0;
        while inline(&writer) == 1 {
            assert!(queued <= INLINE_AFTER_SINGLE_BATCHES, "never inline again");
            writer.write(false, insert).await.unwrap();
            queued += 1;
        }
        // The last of those ran inline.
        assert!(
            queued > INLINE_AFTER_SINGLE_BATCHES - 1,
            "inline again after {} lone writes",
            queued - 1
        );
        assert_eq!(
            writer.write(false, count).await.unwrap(),
            5 + i64::try_from(queued).unwrap()
        );
        drop(writer);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    fn count(tx: &Tx<'_>) -> StorageResult<i64> {
        tx.conn
            .query_row("SELECT count(*) FROM payloads", [], |r| r.get(0))
            .ctx("count")
    }

    /// A write that panics mid-transaction (on the caller's thread, where its task catches the
    /// panic) leaves nothing behind: its partial write is gone, later writes work, and another
    /// connection can take the write lock.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_write_does_not_wedge_the_writer() {
        let path = std::env::temp_dir().join(format!("taskhub-panic-{}.db", std::process::id()));
        let writer = Arc::new(writer(&path));
        let w = Arc::clone(&writer);
        let panicked = tokio::spawn(async move {
            w.write::<(), _>(false, |tx| {
                tx.conn
                    .execute(
                        "INSERT INTO payloads (instance_id, name, data) VALUES ('i', 'p', x'00')",
                        [],
                    )
                    .ctx("insert")?;
                panic!("a write that panics");
            })
            .await
        })
        .await;
        assert!(panicked.is_err());
        assert_eq!(writer.write(false, count).await.unwrap(), 0);
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").unwrap();
        drop(other);
        drop(writer);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
