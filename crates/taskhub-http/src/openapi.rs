//! The OpenAPI description: hand-written JSON (`openapi.json`) kept next to the routes; tests
//! check that it describes exactly [`crate::ROUTES`]. (Generating it with a derive crate would
//! add a dependency and annotations on every handler for a few dozen routes.)

use axum::http::header;
use axum::response::IntoResponse;

/// The document.
pub(crate) const OPENAPI: &str = include_str!("openapi.json");

pub(crate) async fn serve() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn the_document_describes_exactly_the_routes() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).unwrap();
        let mut documented = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                documented.insert((method.to_uppercase(), path.clone()));
            }
        }
        let served: BTreeSet<(String, String)> = crate::ROUTES
            .iter()
            .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
            .collect();
        assert_eq!(documented, served, "openapi.json and ROUTES differ");
    }
}
