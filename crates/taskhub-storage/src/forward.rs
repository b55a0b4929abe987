//! `forward_seam!`: the forwarding of every seam method, written once, for the wrappers around
//! a store ([`Instrumented`](crate::Instrumented), `FaultyStore`).
//!
//! A wrapper is a struct `W<S>` with a field `inner` that is, or derefs to, the wrapped store,
//! and a method
//!
//! ```ignore
//! async fn around<T, F>(&self, op: Operation, call: F) -> StorageResult<T>
//! where
//!     F: Future<Output = StorageResult<T>>;
//! ```
//!
//! that runs the wrapped store's `call` for `op` (counting it, failing it, delaying it, ...).
//! The macro implements every seam trait for `W<S>` (each for an `S` that implements that
//! trait) by passing each call through `around`, and forwards the plain accessors
//! (`max_message_bytes`, `backend_name`, ...) as they are. A new seam method is one line here
//! (and its [`Operation`](crate::Operation)).
//!
//! Two choices remain the wrapper's:
//! * `lease_calls: forward` passes `lease_table` and `renew_partitions` through `around` as
//!   themselves; `lease_calls: default` leaves them to the trait's defaults, so they reach
//!   `around` as the `hub_info`, `list_partitions` and `put_partition` calls they are made of
//!   (a fault plan then aims at those).
//! * `checkpoint: forward` passes `checkpoint` and `checkpoint_observed` through `around`;
//!   `checkpoint: own` leaves `CheckpointStore` to the wrapper (a fault plan tears a
//!   checkpoint between its steps, which `around` cannot see).

/// See the [module docs](self).
macro_rules! forward_seam {
    (
        $wrapper:ident<S $(: ?$sized:ident)?>,
        around: $around:ident,
        lease_calls: $lease:ident,
        checkpoint: $checkpoint:ident $(,)?
    ) => {
        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::queue::QueueStore {
            Enqueue => enqueue(
                queue: $crate::queue::QueueName,
                messages: Vec<$crate::queue::NewQueueMessage>
            ) -> ();
            Dequeue => dequeue(
                queue: $crate::queue::QueueName,
                max: usize,
                visibility: std::time::Duration
            ) -> Vec<$crate::queue::Dequeued>;
            Delete => delete(
                queue: $crate::queue::QueueName,
                receipt: &$crate::queue::Receipt
            ) -> ();
            Abandon => abandon(
                queue: $crate::queue::QueueName,
                receipt: &$crate::queue::Receipt,
                delay: std::time::Duration
            ) -> ();
            Release => release(
                queue: $crate::queue::QueueName,
                receipt: &$crate::queue::Receipt,
                delay: std::time::Duration
            ) -> ();
            Extend => extend(
                queue: $crate::queue::QueueName,
                receipt: &$crate::queue::Receipt,
                visibility: std::time::Duration
            ) -> $crate::queue::Receipt;
            Stats => stats(queue: $crate::queue::QueueName) -> $crate::queue::QueueStats;
        } {
            fn max_message_bytes(&self) -> usize {
                self.inner.max_message_bytes()
            }
            fn max_dequeue_batch(&self) -> usize {
                self.inner.max_dequeue_batch()
            }
            fn max_delay(&self) -> std::time::Duration {
                self.inner.max_delay()
            }
            fn delay_granularity(&self) -> std::time::Duration {
                self.inner.delay_granularity()
            }
            async fn server_now(
                &self,
            ) -> $crate::error::StorageResult<Option<taskhub_core::Timestamp>> {
                self.inner.server_now().await
            }
        });

        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::history::HistoryStore {
            LoadHistory => load_history(
                instance: &taskhub_core::InstanceId
            ) -> Option<$crate::history::HistorySnapshot>;
            DeleteHistory => delete_history(instance: &taskhub_core::InstanceId) -> ();
        } {});

        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::instances::InstanceStore {
            GetInstance => get_instance(
                instance: &taskhub_core::InstanceId
            ) -> Option<$crate::instances::InstanceRow>;
            PutInstance => put_instance(
                row: &$crate::instances::InstanceRow,
                expect: $crate::instances::Expect
            ) -> $crate::history::ETag;
            ListInstances => list_instances(
                query: &$crate::instances::InstanceQuery
            ) -> $crate::instances::InstancePage;
            DeleteInstance => delete_instance(instance: &taskhub_core::InstanceId) -> bool;
            DeleteInstanceIf => delete_instance_if(
                instance: &taskhub_core::InstanceId,
                etag: &$crate::history::ETag
            ) -> bool;
        } {});

        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::payloads::PayloadStore {
            PutPayload => put_payload(
                instance: &taskhub_core::InstanceId,
                name: &str,
                data: Vec<u8>
            ) -> ();
            GetPayload => get_payload(
                instance: &taskhub_core::InstanceId,
                name: &str
            ) -> Option<Vec<u8>>;
            DeletePayloads => delete_payloads(instance: &taskhub_core::InstanceId) -> u64;
        } {});

        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::dead_letters::DeadLetterStore {
            AddDeadLetter => add_dead_letter(letter: $crate::dead_letters::DeadLetter) -> String;
            ListDeadLetters => list_dead_letters(
                after: Option<&str>,
                limit: usize
            ) -> Vec<$crate::dead_letters::DeadLetter>;
            TakeDeadLetter => take_dead_letter(
                id: &str
            ) -> Option<$crate::dead_letters::DeadLetter>;
            MoveToDeadLetters => move_to_dead_letters(
                queue: $crate::queue::QueueName,
                receipt: &$crate::queue::Receipt,
                letter: $crate::dead_letters::DeadLetter
            ) -> String;
        } {});

        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::clear::ClearStore {
            ClearHub => clear_hub() -> $crate::clear::Cleared;
        } {});

        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::processes::ProcessStore {
            AnnounceProcess => announce_process(
                process: &$crate::processes::ProcessAnnouncement
            ) -> $crate::processes::ProcessRecord;
            HeartbeatProcess => heartbeat_process(id: &str) -> $crate::processes::ProcessRecord;
            ListProcesses => list_processes() -> Vec<$crate::processes::ProcessRecord>;
            ForgetProcess => forget_process(id: &str) -> bool;
            StoredSchema => stored_schema() -> u32;
        } {
            fn schema_supported(&self) -> u32 {
                self.inner.schema_supported()
            }
        });

        forward_seam!(@partitions $wrapper [$(?$sized)?] $around $lease);
        forward_seam!(@checkpoint $wrapper [$(?$sized)?] $around $checkpoint);

        impl<S: $crate::store::TaskHubStore $(+ ?$sized)?> $crate::store::TaskHubStore
            for $wrapper<S>
        {
            fn backend_name(&self) -> &'static str {
                self.inner.backend_name()
            }
            fn owns_time(&self) -> bool {
                self.inner.owns_time()
            }
            fn atomic_checkpoints(&self) -> bool {
                self.inner.atomic_checkpoints()
            }
            fn stats_count_held_messages(&self) -> bool {
                self.inner.stats_count_held_messages()
            }
            fn watch_queues(&self, wake: $crate::store::QueueWake) {
                self.inner.watch_queues(wake)
            }
        }
    };

    // One trait: a method per line of `Operation => method(argument: Type, ...) -> Answer;`,
    // then other items as they are. The methods are written out in the same expansion as the
    // `#[async_trait]` impl, so that the attribute sees them.
    (@impl $wrapper:ident [$(?$sized:ident)?] $around:ident $tr:path {
        $($op:ident => $method:ident($($arg:ident: $ty:ty),* $(,)?) -> $answer:ty;)*
    } {
        $($item:item)*
    }) => {
        #[async_trait::async_trait]
        impl<S: $tr $(+ ?$sized)?> $tr for $wrapper<S> {
            $(
                async fn $method(&self, $($arg: $ty),*) -> $crate::error::StorageResult<$answer> {
                    self.$around(
                        $crate::operation::Operation::$op,
                        self.inner.$method($($arg),*),
                    )
                    .await
                }
            )*
            $($item)*
        }
    };

    (@partitions $wrapper:ident [$(?$sized:ident)?] $around:ident $lease:ident) => {
        forward_seam!(@partitions_with $wrapper [$(?$sized)?] $around $lease {
            CreateHub => create_hub(
                partition_count: u32,
                now: taskhub_core::Timestamp
            ) -> $crate::partitions::HubInfo;
            HubInfo => hub_info() -> Option<$crate::partitions::HubInfo>;
            SetPartitionCount => set_partition_count(partition_count: u32) -> ();
            SetProhibitedWorkers => set_prohibited_workers(workers: Vec<String>) -> ();
            ListPartitions => list_partitions() -> Vec<$crate::partitions::PartitionRow>;
            PutPartition => put_partition(
                row: &$crate::partitions::PartitionRow,
                expected: Option<&$crate::history::ETag>
            ) -> $crate::history::ETag;
        });
    };
    (@partitions_with $wrapper:ident [$(?$sized:ident)?] $around:ident forward { $($m:tt)* }) => {
        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::partitions::PartitionStore {
            $($m)*
            LeaseTable => lease_table() -> $crate::partitions::LeaseTable;
            RenewPartitions => renew_partitions(
                writes: &[($crate::partitions::PartitionRow, $crate::history::ETag)]
            ) -> Vec<$crate::error::StorageResult<$crate::history::ETag>>;
        } {});
    };
    (@partitions_with $wrapper:ident [$(?$sized:ident)?] $around:ident default { $($m:tt)* }) => {
        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::partitions::PartitionStore {
            $($m)*
        } {});
    };

    (@checkpoint $wrapper:ident [$(?$sized:ident)?] $around:ident forward) => {
        forward_seam!(@impl $wrapper [$(?$sized)?] $around $crate::checkpoint::CheckpointStore {
            Checkpoint => checkpoint(
                request: $crate::checkpoint::CheckpointRequest
            ) -> $crate::checkpoint::CheckpointOutcome;
            Checkpoint => checkpoint_observed(
                request: $crate::checkpoint::CheckpointRequest,
                observer: &dyn $crate::ordered_checkpoint::StepObserver
            ) -> $crate::checkpoint::CheckpointOutcome;
        } {});
    };
    (@checkpoint $wrapper:ident [$(?$sized:ident)?] $around:ident own) => {};
}
