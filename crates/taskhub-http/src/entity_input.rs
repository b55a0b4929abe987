//! Entity values from a request, checked with the same rules and messages as the CLI
//! (`EntityId::parse`, `EntityId::new`): each failure is a 400 naming its field.

use taskhub::EntityId;

use crate::error::{ApiResult, HttpError};
use crate::validate;

/// An entity ID `@name@key` from a URL (field `entityId`).
pub fn entity_id(text: &str) -> ApiResult<EntityId> {
    EntityId::parse(text).map_err(|e| HttpError::Invalid {
        field: "entityId",
        message: e.to_string(),
    })
}

/// An entity name alone (field `entityName`, or `name` in a query).
pub fn entity_name(field: &'static str, name: &str) -> ApiResult<String> {
    // A name is valid if some key makes a valid ID with it.
    EntityId::new(name, "k").map_err(|e| HttpError::Invalid {
        field,
        message: e.to_string(),
    })?;
    Ok(name.to_owned())
}

/// An entity from a name and a key in a URL (fields `entityName`, then `entityKey`).
pub fn entity_of(name: &str, key: &str) -> ApiResult<EntityId> {
    entity_name("entityName", name)?;
    EntityId::new(name, key).map_err(|e| HttpError::Invalid {
        field: "entityKey",
        message: e.to_string(),
    })
}

/// An operation name (`op`): required, and the rule of an event name.
pub fn operation(op: Option<&str>) -> ApiResult<String> {
    let Some(op) = op else {
        return Err(HttpError::Invalid {
            field: "op",
            message: "the operation name is missing: pass ?op=NAME".to_owned(),
        });
    };
    validate::event_name(op).map_err(|e| match e {
        HttpError::Invalid { message, .. } => HttpError::Invalid {
            field: "op",
            message: message.replace("event name", "operation name"),
        },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_entity_values_name_their_field_with_the_cli_message() {
        let cli = EntityId::parse("Counter").unwrap_err().to_string();
        assert!(
            matches!(entity_id("Counter"), Err(HttpError::Invalid { field: "entityId", message }) if message == cli)
        );
        assert!(matches!(
            entity_of("Coun@ter", "k"),
            Err(HttpError::Invalid {
                field: "entityName",
                ..
            })
        ));
        assert!(matches!(
            entity_of("Counter", ""),
            Err(HttpError::Invalid {
                field: "entityKey",
                ..
            })
        ));
        assert!(matches!(
            operation(None),
            Err(HttpError::Invalid { field: "op", .. })
        ));
        assert!(matches!(
            operation(Some("")),
            Err(HttpError::Invalid { field: "op", .. })
        ));
        assert_eq!(
            entity_of("Counter", "a@b").unwrap().to_string(),
            "@Counter@a@b"
        );
        assert_eq!(operation(Some("add")).unwrap(), "add");
    }
}
