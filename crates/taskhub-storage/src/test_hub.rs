//! What the backends' test configurations share (feature `testing`): the variable that names
//! a test's server ([`server_variable`]).

/// The value of the environment variable `var` that names the server a backend's tests put
/// their hubs on, exported by `script` (`scripts/with-azurite.sh`).
///
/// # Panics
/// When `var` is unset, saying that the test needs `server` and how to run it.
#[must_use]
pub fn server_variable(var: &str, server: &str, script: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set. This test needs {server}: run it as `{script} cargo test …` \
             (scripts/test.sh does this), which provides it and sets {var}."
        )
    })
}
