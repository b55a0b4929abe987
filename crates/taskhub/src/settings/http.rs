//! The HTTP management API's setting: `http_token`. The runtime does not read it; the commands
//! that serve the API (`taskhub serve`, `taskhub worker --http`) do.

use super::{Secret, Settings};

/// The settings of this module.
pub(crate) const KEYS: [&str; 1] = ["http_token"];

/// Parses one of [`KEYS`] into `settings` (the token is kept as a [`Secret`]: never echoed).
pub(crate) fn set(settings: &mut Settings, _name: &str, value: &str) {
    settings.http_token = Secret::new(value.trim());
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn the_token_comes_from_the_environment_and_is_never_printed() {
        let env = HashMap::from([("TASKHUB_HTTP_TOKEN".to_owned(), "s3cret-token".to_owned())]);
        let s = Settings::load(None, &env).unwrap();
        assert_eq!(s.http_token.expose(), "s3cret-token");
        assert!(!format!("{s:?}").contains("s3cret-token"));
        assert!(Settings::default().http_token.is_empty());
    }
}
