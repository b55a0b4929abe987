//! The statement of a page, with recorded parameters.

use taskhub_core::{OrchestrationStatus, Timestamp};

use super::*;

/// Records values as text; SQLite's placeholders.
#[derive(Default)]
struct Recorded(Vec<String>);

impl Params for Recorded {
    fn text(&mut self, value: String) -> String {
        self.0.push(value);
        question_mark(self.0.len())
    }

    fn integer(&mut self, value: i64) -> String {
        self.text(value.to_string())
    }

    fn status_in(&mut self, statuses: Vec<String>) -> String {
        let marks: Vec<String> = statuses.into_iter().map(|s| self.text(s)).collect();
        format!("status IN ({})", marks.join(", "))
    }

    fn tags_hold(&mut self, tags: &Tags) -> StorageResult<String> {
        Ok(format!("tags @> {}", self.text(format!("{tags:?}"))))
    }
}

#[test]
fn a_filtered_query_binds_in_order() {
    let query = InstanceQuery {
        statuses: vec![OrchestrationStatus::Running, OrchestrationStatus::Pending],
        name: Some("Orders".into()),
        created_from: Some(Timestamp::from_millis(5)),
        updated_to: Some(Timestamp::from_millis(9)),
        instance_id_prefix: Some("ab".into()),
        tags: [("k".to_owned(), "v".to_owned())].into(),
        continuation: Some("ab7".into()),
        ..InstanceQuery::default()
    };
    let mut p = Recorded::default();
    let sql = select_page(&query, "instance_id", 11, &mut p).unwrap();
    assert_eq!(
        sql,
        "SELECT instance_id FROM instances WHERE status IN (?1, ?2) AND name = ?3 AND \
         created_at >= ?4 AND updated_at < ?5 AND instance_id >= ?6 AND instance_id < ?7 AND \
         (instance_id < '@' OR instance_id >= 'A') AND tags @> ?8 AND instance_id > ?9 \
         ORDER BY instance_id LIMIT ?10"
    );
    assert_eq!(
        p.0,
        [
            "Running",
            "Pending",
            "Orders",
            "5",
            "9",
            "ab",
            "ac",
            "{\"k\": \"v\"}",
            "ab7",
            "11"
        ]
    );
}

#[test]
fn creation_order_resumes_after_its_cursor() {
    let query = InstanceQuery {
        include_entities: true,
        order: ListOrder::NewestFirst,
        continuation: Some(
            CreatedCursor {
                created_at: Timestamp::from_millis(7),
                instance_id: "x".into(),
            }
            .token(),
        ),
        ..InstanceQuery::default()
    };
    let sql = select_page(&query, "*", 3, &mut Recorded::default()).unwrap();
    assert_eq!(
        sql,
        "SELECT * FROM instances WHERE (created_at, instance_id) < (?1, ?2) \
         ORDER BY created_at DESC, instance_id DESC LIMIT ?3"
    );
    let bad = InstanceQuery {
        continuation: Some("not a cursor".into()),
        ..query
    };
    assert!(select_page(&bad, "*", 3, &mut Recorded::default()).is_err());
}

#[test]
fn page_sizes_and_prefix_bounds() {
    let mut query = InstanceQuery::default();
    assert_eq!(page_size(&query).unwrap(), DEFAULT_PAGE_SIZE);
    query.page_size = MAX_PAGE_SIZE + 1;
    assert!(page_size(&query).is_err());
    assert_eq!(prefix_upper_bound("ab").as_deref(), Some("ac"));
    assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
    assert_eq!(prefix_upper_bound("\u{10FFFF}"), None);
    assert_eq!(
        prefix_upper_bound("a\u{D7FF}").as_deref(),
        Some("a\u{E000}")
    );
    assert_eq!(dollar(3), "$3");
}
