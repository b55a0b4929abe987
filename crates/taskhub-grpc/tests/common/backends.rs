//! One test body run on several backends, one `#[tokio::test]` per backend under the name
//! each test already has (so `cargo test NAME` and the scripts that name tests still work).

/// Declares, for each `name = Backend` pair, a multi-thread `#[tokio::test]` `name` that awaits
/// `body(Backend::…)`, or `body(args…, Backend::…)`:
///
/// ```ignore
/// common::on_backends!(run_scenarios, go_sdk_on_sqlite = Sqlite, go_sdk_on_azurite = Azure);
/// common::on_backends!(rewound(go()), go_rewound_on_sqlite = Sqlite);
/// ```
#[allow(
    unused_macros,
    reason = "not every test file runs a body on several backends"
)]
macro_rules! on_backends {
    ($body:ident, $($name:ident = $backend:ident),+ $(,)?) => {
        $crate::common::on_backends!($body(), $($name = $backend),+);
    };
    ($body:ident $args:tt, $($name:ident = $backend:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                $crate::common::on_backends!(@call $body $args $backend);
            }
        )+
    };
    (@call $body:ident ($($arg:expr),*) $backend:ident) => {
        $body($($arg,)* $crate::common::Backend::$backend).await
    };
}

#[allow(
    unused_imports,
    reason = "not every test file runs a body on several backends"
)]
pub(crate) use on_backends;
