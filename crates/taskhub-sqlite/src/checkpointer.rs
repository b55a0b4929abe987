//! The WAL checkpointer thread: copies the WAL into the database file off the writer thread.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses its threshold, on the
//! writer thread, where every queued write waits for it (tens of milliseconds for a large WAL).
//! Instead the writer connection's WAL hook nudges this thread once the WAL holds
//! [`CHECKPOINT_AFTER_PAGES`] frames, and the thread runs a `PASSIVE` checkpoint on its own
//! connection: it copies what no reader still needs, without blocking the writer or the readers.
//! Once a checkpoint has copied everything, the writer starts the WAL over at its next
//! transaction, so the file stops growing.

use std::cell::Cell;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use rusqlite::wal::CheckpointMode;
use rusqlite::Connection;
use taskhub_storage::{StorageError, StorageResult};

/// WAL frames (pages) after which the writer asks for a checkpoint.
pub(crate) const CHECKPOINT_AFTER_PAGES: i32 = 8000;

/// WAL growth (pages) between two nudges while the WAL has not started over.
const NUDGE_STEP_PAGES: i32 = 1000;

/// WAL frames after which the writer checkpoints itself, as SQLite's automatic checkpoint
/// would: under a steady stream of commits the thread's checkpoints may never catch up with the
/// end of the WAL (and only a fully copied WAL starts over), so this bounds its size.
pub(crate) const WRITER_CHECKPOINTS_AFTER_PAGES: i32 = 2 * CHECKPOINT_AFTER_PAGES;

/// WAL frames after which the writer's own checkpoint waits (busy timeout) for a checkpoint
/// the thread is running, instead of giving up at once: a `PASSIVE` checkpoint cannot even
/// start while another holds the checkpoint lock, so under a sustained stream of commits on a
/// loaded machine one long checkpoint of the thread could otherwise keep every attempt of the
/// writer out, and the WAL would grow without bound.
pub(crate) const WRITER_WAITS_AFTER_PAGES: i32 = 3 * CHECKPOINT_AFTER_PAGES;

thread_local! {
    /// Set on the writer thread: only there may a commit run a checkpoint itself.
    static ON_WRITER_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as the writer thread (see [`Checkpointer::watch`]).
pub(crate) fn on_writer_thread() {
    ON_WRITER_THREAD.with(|f| f.set(true));
}

/// The handle to the checkpointer thread; dropping it ends the thread.
pub(crate) struct Checkpointer {
    nudge: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
    done: Arc<AtomicU64>,
}

impl Checkpointer {
    /// Starts the thread on `conn` (a connection of its own to the database file).
    pub(crate) fn start(conn: Connection) -> StorageResult<Self> {
        // One pending nudge is enough: a checkpoint copies everything committed before it.
        let (nudge, nudged) = mpsc::sync_channel(1);
        let done = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&done);
        let thread = std::thread::Builder::new()
            .name("taskhub-sqlite-checkpointer".into())
            .spawn(move || run(&conn, &nudged, &counted))
            .map_err(|e| {
                StorageError::Unavailable(format!("cannot start the checkpointer thread: {e}"))
            })?;
        Ok(Self {
            nudge: Some(nudge),
            thread: Some(thread),
            done,
        })
    }

    /// Checkpoints this thread has completed.
    pub(crate) fn checkpoints(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Makes the writer connection nudge this thread when its WAL grows past the threshold.
    /// This replaces SQLite's automatic checkpoint on that connection. `wal_pages` is kept at
    /// the WAL's size after each commit: a write on a caller's thread (see `writer`) is not
    /// allowed once the WAL is due for a checkpoint by the writer itself, which only the writer
    /// thread runs, never an async thread.
    pub(crate) fn watch(
        &self,
        writer: &mut Connection,
        wal_pages: Arc<AtomicI32>,
    ) -> StorageResult<()> {
        let Some(nudge) = self.nudge.clone() else {
            return Ok(());
        };
        // The WAL size at the last nudge: while the WAL cannot start over (a reader still uses
        // it), nudge again only after it grew by another step, not after every commit.
        let mut nudged_at = 0;
        // The WAL size at the last `FULL` checkpoint that could not finish (a long read held
        // it up for the busy timeout): the next waits until the WAL grew by another step, so
        // a long reader stalls the writer once per step, not at every commit.
        let mut full_failed_at = 0;
        writer
            .wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages: i32| {
                wal_pages.store(pages, Ordering::Relaxed);
                if pages < CHECKPOINT_AFTER_PAGES {
                    // The WAL started over.
                    nudged_at = 0;
                    full_failed_at = 0;
                } else if pages >= WRITER_CHECKPOINTS_AFTER_PAGES
                    && ON_WRITER_THREAD.with(Cell::get)
                {
                    // Best effort, like the automatic checkpoint it stands in for; past the
                    // second threshold it waits for the thread's checkpoint to end (`FULL`
                    // uses the busy handler; the write lock is already released here).
                    let wait = pages >= WRITER_WAITS_AFTER_PAGES
                        && (full_failed_at == 0 || pages - full_failed_at >= NUDGE_STEP_PAGES);
                    if wait {
                        if wal.checkpoint_v2(CheckpointMode::FULL).is_err() {
                            full_failed_at = pages;
                        }
                    } else {
                        let _ = wal.checkpoint_v2(CheckpointMode::PASSIVE);
                    }
                } else if pages < nudged_at || pages - nudged_at >= NUDGE_STEP_PAGES {
                    nudged_at = pages;
                    // Full: a checkpoint is already due. Closed: the store is shutting down.
                    match nudge.try_send(()) {
                        Ok(()) | Err(TrySendError::Full(()) | TrySendError::Disconnected(())) => {}
                    }
                }
                Ok(())
            }))
            .map_err(|e| StorageError::Backend(format!("cannot watch the WAL: {e}")))
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.nudge = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(conn: &Connection, nudged: &Receiver<()>, done: &AtomicU64) {
    while nudged.recv().is_ok() {
        // A failure (say, another process's checkpoint holds the lock) leaves the frames for
        // the next nudge; the WAL only grows meanwhile.
        if conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .is_ok()
        {
            done.fetch_add(1, Ordering::Relaxed);
        }
    }
}
