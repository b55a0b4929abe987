//! Which registration runs a start of a given version: the exact version first, else the one
//! registered without a version (durabletask-dotnet's fallback), else `OrchestrationNotFound`.
#![allow(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a panic is a failed test"
)]

mod common;
use std::sync::Arc;

use common::*;
use taskhub_core::*;

fn says(reg: &mut Registry, version: Option<&'static str>, label: &'static str) {
    let f = move |ctx: OrchestrationContext, (): ()| async move {
        Ok::<_, OrchestrationError>(format!("{label} ran {:?}", ctx.version()))
    };
    match version {
        Some(v) => reg.orchestration_version("Order", v, f),
        None => reg.orchestration("Order", f),
    };
}

/// For each `(version, output)`: `Order` started at `version` completes its first turn with
/// `output`.
fn order_runs(reg: &Arc<Registry>, cases: &[(Option<&str>, &str)]) {
    for (version, output) in cases {
        let got = first_turn_of(reg, "Order", *version).unwrap();
        assert_eq!(got, *output, "version {version:?}");
    }
}

#[test]
fn a_registration_without_a_version_runs_any_version_without_its_own() {
    let mut reg = Registry::new();
    says(&mut reg, None, "unversioned");
    says(&mut reg, Some("2"), "v2");
    let reg = Arc::new(reg);

    order_runs(
        &reg,
        &[
            // The exact registration is preferred.
            (Some("2"), "v2 ran Some(\"2\")"),
            // A version with no registration of its own falls back to the unversioned one,
            // which sees the instance's version.
            (Some("1"), "unversioned ran Some(\"1\")"),
            (Some("3.0"), "unversioned ran Some(\"3.0\")"),
            // No version: the unversioned one.
            (None, "unversioned ran None"),
        ],
    );
    assert!(reg.has_orchestration_version("Order", Some("1")));
    assert!(reg.has_orchestration_version("Order", None));

    // The fallback is per name: another name is still not registered.
    let missing = first_turn_of(&reg, "Refund", Some("1")).unwrap_err();
    assert_eq!(missing.error_type, "OrchestrationNotFound");
    assert!(!reg.has_orchestration_version("Refund", Some("1")));
}

#[test]
fn the_order_of_registration_does_not_matter() {
    let mut reg = Registry::new();
    says(&mut reg, Some("2"), "v2");
    says(&mut reg, None, "unversioned");
    let reg = Arc::new(reg);
    order_runs(
        &reg,
        &[
            (Some("2"), "v2 ran Some(\"2\")"),
            (Some("1"), "unversioned ran Some(\"1\")"),
        ],
    );
}

#[test]
fn only_versioned_registrations_still_need_an_exact_match() {
    let mut reg = Registry::new();
    says(&mut reg, Some("1"), "v1");
    says(&mut reg, Some("2"), "v2");
    let reg = Arc::new(reg);
    order_runs(&reg, &[(Some("1"), "v1 ran Some(\"1\")")]);
    let missing = first_turn_of(&reg, "Order", Some("3")).unwrap_err();
    assert_eq!(missing.error_type, "OrchestrationNotFound");
    assert!(
        missing
            .message
            .contains("'Order' version '3' is not registered"),
        "{}",
        missing.message
    );
    assert!(missing.non_retryable);
    assert!(!reg.has_orchestration_version("Order", Some("3")));
    // No version: the one registered last.
    assert_eq!(first_turn_of(&reg, "Order", None).unwrap(), "v2 ran None");
    assert!(reg.has_orchestration_version("Order", None));
}
