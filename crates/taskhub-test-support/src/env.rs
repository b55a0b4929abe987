//! The variables of the test environment: each is set by a script under `scripts/` that
//! provides what the tests need (an Azurite, a Chromium, the Python, JavaScript, Go and Java
//! SDKs), and each reader panics with how to run the test when its variable is unset.

/// The connection string of the Azure account the Azure tests use (Azurite), exported by
/// `scripts/with-azurite.sh`.
pub const AZURE_CONNECTION_STRING: &str = "TASKHUB_TEST_AZURE_CONNECTION_STRING";

/// The Chromium binary of the browser test, exported by `scripts/with-chromium.sh`.
pub const CHROMIUM: &str = "TASKHUB_CHROMIUM";

/// Playwright's install directory for the browser test, exported by `scripts/with-chromium.sh`.
pub const PLAYWRIGHT_DIR: &str = "TASKHUB_PLAYWRIGHT_DIR";

/// The Python of the venv that holds the pinned Durable Task Python SDK, exported by
/// `scripts/with-python-sdk.sh`.
pub const PYTHON_SDK: &str = "TASKHUB_PYTHON_SDK";

/// The `node_modules` folder that holds the pinned Durable Task JavaScript SDK, exported by
/// `scripts/with-js-sdk.sh`.
pub const JS_SDK: &str = "TASKHUB_JS_SDK";

/// The scenario program built with the pinned Durable Task Go SDK, exported by
/// `scripts/with-go-sdk.sh`.
pub const GO_SDK: &str = "TASKHUB_GO_SDK";

/// The classpath of the scenario program built with the pinned Durable Task Java SDK (its
/// classes, then the SDK's jars), exported by `scripts/with-java-sdk.sh`.
pub const JAVA_SDK: &str = "TASKHUB_JAVA_SDK";

/// The value of `var`; panics, when it is unset, saying that `needs` and how to run `command`
/// under `script`.
fn required(var: &str, needs: &str, script: &str, command: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set. This test needs {needs}: run it as `{script} {command}` \
             (scripts/test.sh does this), which provides it and sets {var}."
        )
    })
}

/// The Azure test account's connection string; `command` is how to run the test (e.g.
/// `cargo test -p taskhub-http`), for the message when it is unset.
pub fn azure_connection_string(command: &str) -> String {
    required(
        AZURE_CONNECTION_STRING,
        "Azurite (a private one on free ports)",
        "scripts/with-azurite.sh",
        command,
    )
}

/// The browser test's Chromium and Playwright directory.
#[derive(Debug, Clone)]
pub struct Chromium {
    /// The Chromium binary.
    pub binary: String,
    /// Playwright's install directory.
    pub playwright_dir: String,
}

/// The browser test's Chromium; `command` is how to run the test.
pub fn chromium(command: &str) -> Chromium {
    let script = "scripts/with-chromium.sh";
    Chromium {
        binary: required(CHROMIUM, "a headless Chromium", script, command),
        playwright_dir: required(PLAYWRIGHT_DIR, "Playwright", script, command),
    }
}

/// The Python of the venv with the Durable Task Python SDK; `command` is how to run the test.
pub fn python_sdk(command: &str) -> String {
    required(
        PYTHON_SDK,
        "the Durable Task Python SDK (the pinned `durabletask` in .venv-sdk/)",
        "scripts/with-python-sdk.sh",
        command,
    )
}

/// The `node_modules` folder with the Durable Task JavaScript SDK (for `NODE_PATH`);
/// `command` is how to run the test.
pub fn js_sdk(command: &str) -> String {
    required(
        JS_SDK,
        "the Durable Task JavaScript SDK (the pinned `@microsoft/durabletask-js` in .js-sdk/)",
        "scripts/with-js-sdk.sh",
        command,
    )
}

/// The scenario program built with the Durable Task Go SDK (crates/taskhub-grpc/tests/go);
/// `command` is how to run the test.
pub fn go_sdk(command: &str) -> String {
    required(
        GO_SDK,
        "the Durable Task Go SDK (the pinned `github.com/microsoft/durabletask-go`, built into \
         .go-sdk/)",
        "scripts/with-go-sdk.sh",
        command,
    )
}

/// The classpath of the scenario program built with the Durable Task Java SDK
/// (crates/taskhub-grpc/tests/java), for `CLASSPATH`; `command` is how to run the test.
pub fn java_sdk(command: &str) -> String {
    required(
        JAVA_SDK,
        "the Durable Task Java SDK (the pinned `com.microsoft:durabletask-client`, built with \
         Maven into .java-sdk/)",
        "scripts/with-java-sdk.sh",
        command,
    )
}

/// The URL of the throwaway PostgreSQL server the PostgreSQL tests use, exported by
/// `scripts/with-postgres.sh`.
pub const POSTGRES_URL: &str = "TASKHUB_TEST_POSTGRES_URL";

/// The PostgreSQL tests' server URL; `command` is how to run the test (e.g.
/// `cargo test -p taskhub-postgres`), for the message when it is unset.
pub fn postgres_url(command: &str) -> String {
    required(
        POSTGRES_URL,
        "a PostgreSQL server (a private, throwaway cluster on a free port)",
        "scripts/with-postgres.sh",
        command,
    )
}
