//! The conformance suite every backend runs (feature `testing`).
//!
//! Each case is a `pub async fn case(s: &dyn TaskHubStore, clock: &ManualClock)` that
//! checks one "MUST" of the trait docs (a few check a field or type doc instead; their docs
//! say so) on a fresh, empty store built on `clock`. A backend runs them all with one line in
//! its `tests/conformance.rs`:
//!
//! ```ignore
//! taskhub_storage::conformance_tests!(make_store);
//! ```
//!
//! where `make_store(clock: ManualClock)` returns a future of a fresh, empty
//! `Arc<dyn TaskHubStore>` (or `Arc` of the backend type) built on that clock. The macro
//! expands to one `#[tokio::test]` per case, grouped in one module per area (`queues::…`,
//! `checkpoint::…`). The backend needs only `taskhub-storage` with feature `testing` as a
//! dev-dependency, under its own name `taskhub-storage`.
//!
//! Every case is listed in exactly one place, the macro; a unit test fails if a case is missing
//! from it.
#![allow(
    clippy::indexing_slicing,
    reason = "the cases are tests: an index out of range is a failed case, as an assert is"
)]
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test-support code: a failed expectation is the point"
)]

pub mod checkpoint;
pub mod claims;
pub mod clear;
pub mod conditional_delete;
pub mod dead_letters;
pub mod entity_filter;
pub mod entity_rows;
mod fixtures;
pub mod history;
pub mod instances;
pub mod partitions;
pub mod payloads;
pub mod processes;
pub mod queues;
mod refused;
pub mod rewind;
pub mod tags;

pub use fixtures::START;

use crate::clock::ManualClock;

/// The clock a conformance case starts with: manual, at [`START`].
#[must_use]
pub fn start_clock() -> ManualClock {
    ManualClock::new(START)
}

/// Runs the whole conformance suite against a backend: one `#[tokio::test]` per case.
///
/// `$make_store` is any expression callable as `make_store(clock: ManualClock)` that returns a
/// future of a fresh, empty store (`Arc<dyn TaskHubStore>` or an `Arc` of the backend type)
/// built on that clock. See the [`conformance`](crate::conformance) module docs.
#[macro_export]
macro_rules! conformance_tests {
    // The one list of every case, handed to one of the `@expand` arms.
    (@list $($mode:tt)*) => {
        $crate::conformance_tests! { @expand [$($mode)*]
            queues {
                enqueue_rejects_body_over_max_message_bytes,
                enqueue_delay_hides_message_until_due,
                dequeue_returns_at_most_max,
                dequeue_rejects_max_of_zero_or_over_batch_limit,
                dequeue_hides_message_until_visibility_timeout,
                expired_message_is_redelivered_with_dequeue_count_plus_one,
                dequeue_returns_every_visible_message_once,
                delete_with_current_receipt_removes_message_for_good,
                delete_with_stale_receipt_fails_and_keeps_message,
                abandon_makes_message_visible_after_delay,
                abandon_keeps_dequeue_count,
                abandon_invalidates_receipt,
                release_makes_message_visible_after_delay_without_counting_the_delivery,
                release_invalidates_receipt,
                extend_pushes_visibility_timeout_from_now,
                extend_returns_new_receipt_replacing_old,
                stats_counts_visible_and_invisible_messages,
                stats_reports_oldest_enqueue_time,
                dequeued_message_reports_body_count_and_enqueue_time,
                queues_are_independent,
            }
            history {
                load_history_of_unknown_instance_is_none,
                load_history_returns_events_in_append_order,
                load_history_returns_only_current_execution,
                every_event_kind_round_trips_exactly,
                delete_history_removes_every_execution,
                delete_missing_history_succeeds,
            }
            instances {
                put_instance_absent_conflicts_when_row_exists,
                put_instance_etag_conflicts_unless_etag_matches,
                put_instance_etag_conflicts_when_row_missing,
                put_instance_returns_new_different_etag,
                get_instance_returns_row_with_current_etag,
                get_missing_instance_is_none,
                put_instance_any_writes_unconditionally,
                put_instance_absent_or_pending_never_replaces_a_row_further_along,
                instance_row_round_trips_every_field,
                list_instances_filters_by_status,
                list_instances_filters_by_name,
                list_instances_filters_by_created_range,
                list_instances_filters_by_instance_id_prefix,
                list_instances_combines_filters,
                list_instances_orders_by_instance_id,
                list_instances_orders_by_creation_time,
                list_instances_filters_by_completed_and_updated_time,
                list_instances_returns_at_most_page_size,
                list_instances_continuation_visits_every_match_once,
                delete_instance_removes_row_and_reports_existence,
            }
            payloads {
                put_payload_overwrites_same_key,
                get_payload_returns_exact_bytes,
                get_missing_payload_is_none,
                delete_payloads_removes_every_blob_of_instance_and_counts,
            }
            dead_letters {
                add_dead_letter_assigns_new_unique_ids,
                list_dead_letters_returns_oldest_first,
                list_dead_letters_returns_at_most_limit,
                list_dead_letters_starts_after_given_id,
                take_dead_letter_removes_and_returns_it,
                take_missing_dead_letter_is_none,
                move_to_dead_letters_stores_the_letter_deletes_the_message_and_is_not_repeated,
                move_to_dead_letters_with_stale_receipt_stores_nothing,
            }
            partitions {
                hub_info_is_none_before_create,
                create_hub_creates_partition_rows_at_epoch_zero_without_owner,
                create_hub_when_hub_exists_keeps_and_returns_stored,
                create_hub_rejects_partition_count_zero_or_over_16,
                list_partitions_returns_every_row_in_order_with_current_etag,
                put_partition_conflicts_unless_expected_etag_matches,
                put_partition_without_expected_etag_requires_missing_row,
                put_partition_returns_new_different_etag,
                set_partition_count_changes_hub_info,
                set_prohibited_workers_replaces_the_list,
                partition_row_round_trips_every_field,
                lease_table_returns_hub_info_and_every_row,
                doorbell_rung_in_a_renewal_is_seen_by_the_next_lease_read,
                renew_partitions_applies_each_write_and_reports_conflicts_alone,
            }
            checkpoint {
                fenced_checkpoint_is_rejected_and_changes_nothing,
                checkpoint_with_stale_history_etag_conflicts_and_changes_nothing,
                concurrent_checkpoints_from_same_history_commit_once,
                concurrent_first_checkpoints_commit_once,
                checkpoint_appends_events_after_loaded_history,
                new_execution_checkpoint_replaces_old_events,
                checkpoint_outbound_messages_are_dequeueable_with_delay_honoured,
                checkpoint_deletes_consumed_messages,
                checkpoint_writes_instance_row,
                pending_outbox_is_empty_after_complete_checkpoint,
                stale_consumed_receipt_does_not_fail_checkpoint,
                checkpoint_outcome_reports_stored_etags,
            }
            rewind {
                replace_under_the_same_execution_id_leaves_exactly_the_new_events,
                replace_with_a_stale_etag_conflicts_and_changes_nothing,
                replace_under_an_old_lease_epoch_is_fenced_and_changes_nothing,
                append_after_a_replace_continues_from_the_new_events,
                racing_replace_and_append_from_the_same_history_commit_once,
            }
            entity_rows {
                checkpoint_without_history_commits_by_the_row_condition,
                atomic_checkpoint_with_a_failed_row_condition_changes_nothing,
            }
            tags {
                instance_row_round_trips_tags_and_execution_records,
                list_instances_filters_by_tags,
            }
            claims {
                claimed_messages_are_hidden_and_held_by_the_sender,
                unfinished_claim_is_redelivered_after_its_visibility,
                released_claim_is_visible_without_counting,
                claim_with_delay_is_rejected_and_writes_nothing,
            }
            entity_filter {
                list_instances_leaves_entities_out_unless_asked,
            }
            conditional_delete {
                delete_instance_if_deletes_only_the_row_at_that_etag,
            }
            clear {
                clear_hub_empties_the_hub_and_keeps_its_partitions,
            }
            processes {
                announced_processes_are_listed_with_this_builds_schema,
                announcing_again_replaces_the_record,
                heartbeat_renews_the_time_and_keeps_the_rest,
                a_forgotten_process_is_gone_and_its_heartbeat_not_found,
                a_new_hub_is_at_the_supported_schema,
                clearing_the_hub_keeps_the_process_records,
            }
        }
    };
    // "module::case" names, for the crate's own check that the list is complete.
    (@expand [names] $($module:ident { $($case:ident),* $(,)? })*) => {
        &[$($(concat!(stringify!($module), "::", stringify!($case)),)*)*]
    };
    // One test module per area, one test per case.
    (@expand [tests $make_store:expr] $($module:ident { $($case:ident),* $(,)? })*) => {
        $(
            mod $module {
                #[allow(unused_imports)]
                use super::*;
                $(
                    #[$crate::__private::tokio::test(
                        crate = "::taskhub_storage::__private::tokio",
                        flavor = "multi_thread",
                        worker_threads = 2
                    )]
                    async fn $case() {
                        let clock = $crate::conformance::start_clock();
                        let store: ::std::sync::Arc<dyn $crate::TaskHubStore> =
                            ($make_store)(::std::clone::Clone::clone(&clock)).await;
                        $crate::conformance::$module::$case(&*store, &clock).await;
                    }
                )*
            }
        )*
    };
    ($make_store:expr $(,)?) => {
        $crate::conformance_tests! { @list tests $make_store }
    };
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// Every area file with its cases.
    const SOURCES: [(&str, &str); 15] = [
        ("queues", include_str!("queues.rs")),
        ("history", include_str!("history.rs")),
        ("instances", include_str!("instances.rs")),
        ("payloads", include_str!("payloads.rs")),
        ("dead_letters", include_str!("dead_letters.rs")),
        ("partitions", include_str!("partitions.rs")),
        ("checkpoint", include_str!("checkpoint.rs")),
        ("rewind", include_str!("rewind.rs")),
        ("entity_rows", include_str!("entity_rows.rs")),
        ("claims", include_str!("claims.rs")),
        ("tags", include_str!("tags.rs")),
        ("entity_filter", include_str!("entity_filter.rs")),
        ("conditional_delete", include_str!("conditional_delete.rs")),
        ("clear", include_str!("clear.rs")),
        ("processes", include_str!("processes.rs")),
    ];

    /// Files of this directory that hold no cases.
    const NOT_AREAS: [&str; 3] = ["mod.rs", "fixtures.rs", "refused.rs"];

    fn cases_in_sources() -> BTreeSet<String> {
        let mut cases = BTreeSet::new();
        for (module, source) in SOURCES {
            for line in source.lines() {
                if let Some(rest) = line.trim_start().strip_prefix("pub async fn ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    assert!(
                        cases.insert(format!("{module}::{name}")),
                        "{module}::{name} twice"
                    );
                }
            }
        }
        cases
    }

    #[test]
    fn every_case_is_in_the_macro_list() {
        let listed: &[&str] = crate::conformance_tests!(@list names);
        let listed_set: BTreeSet<String> = listed.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(listed_set.len(), listed.len(), "a case is listed twice");
        let defined = cases_in_sources();
        let missing: Vec<&String> = defined.difference(&listed_set).collect();
        assert!(
            missing.is_empty(),
            "cases missing from conformance_tests!: {missing:?}"
        );
        // The reverse (a listed case that doesn't exist) fails to compile in the backends'
        // tests; check it here too.
        let unknown: Vec<&String> = listed_set.difference(&defined).collect();
        assert!(unknown.is_empty(), "listed but not defined: {unknown:?}");
        assert!(defined.len() > 50, "only {} cases found", defined.len());
    }

    #[test]
    fn every_area_file_is_scanned() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/conformance");
        let scanned: BTreeSet<String> = SOURCES.iter().map(|(m, _)| format!("{m}.rs")).collect();
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                scanned.contains(&name) || NOT_AREAS.contains(&name.as_str()),
                "conformance/{name} is not scanned by every_case_is_in_the_macro_list"
            );
        }
    }
}
