//! The HTTP management API's setting: `http_token`. The runtime does not read it; the commands
//! that serve the API (`taskhub serve`, `taskhub worker --http`) do.

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::Settings;

    #[test]
    fn the_token_comes_from_the_environment_and_is_never_printed() {
        let env = HashMap::from([("TASKHUB_HTTP_TOKEN".to_owned(), "s3cret-token".to_owned())]);
        let s = Settings::load(None, &env).unwrap();
        assert_eq!(s.http_token.expose(), "s3cret-token");
        assert!(!format!("{s:?}").contains("s3cret-token"));
        assert!(Settings::default().http_token.is_empty());
    }
}
