//! Entity IDs: `(name, key)`, written `@name@key` as the entity's instance ID; validated, a
//! rejected one is [`CoreError::InvalidEntityId`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::ids::InstanceId;

/// The identity of a durable entity: its registered name and a key naming one instance of it.
///
/// Its instance ID is `@name@key` (the Durable Functions convention): it lives on the
/// partition that ID hashes to, like any instance. The name is 1 or more characters without
/// `@`; the key is 1 or more characters and may contain `@`; neither may contain control
/// characters or `/ \ # ?`, and the whole ID is at most 256 bytes. Names are case-sensitive.
///
/// ```
/// use taskhub_core::EntityId;
///
/// let id = EntityId::new("Counter", "north")?;
/// assert_eq!(id.to_string(), "@Counter@north");
/// assert_eq!(EntityId::parse("@Counter@north")?, id);
/// assert!(EntityId::new("Count@er", "x").is_err());
/// assert!(EntityId::parse("Counter").is_err());
/// # Ok::<(), taskhub_core::CoreError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntityId {
    instance: InstanceId,
    name_len: usize,
}

impl EntityId {
    /// An entity ID from its name and key.
    ///
    /// # Errors
    /// [`CoreError::InvalidEntityId`] naming the broken rule.
    pub fn new(name: impl Into<String>, key: impl Into<String>) -> Result<Self, CoreError> {
        let name = name.into();
        let key = key.into();
        let full = format!("@{name}@{key}");
        let reject = |reason| {
            Err(CoreError::InvalidEntityId {
                id: full.chars().take(300).collect(),
                reason,
            })
        };
        if name.is_empty() {
            return reject("the entity name is empty");
        }
        if name.contains('@') {
            return reject("the entity name contains '@'");
        }
        if key.is_empty() {
            return reject("the entity key is empty");
        }
        let instance = match InstanceId::new(full.clone()) {
            Ok(i) => i,
            Err(CoreError::InvalidInstanceId { reason, .. }) => return reject(reason),
            Err(_) => return reject("it is not a valid instance ID"),
        };
        Ok(Self {
            instance,
            name_len: name.len(),
        })
    }

    /// Parses `@name@key`.
    ///
    /// # Errors
    /// [`CoreError::InvalidEntityId`] if it is not of that form or breaks a rule of
    /// [`new`](Self::new).
    pub fn parse(id: &str) -> Result<Self, CoreError> {
        let Some(rest) = id.strip_prefix('@') else {
            return Err(CoreError::InvalidEntityId {
                id: id.chars().take(300).collect(),
                reason: "it does not start with '@' (the form is @name@key)",
            });
        };
        let Some((name, key)) = rest.split_once('@') else {
            return Err(CoreError::InvalidEntityId {
                id: id.chars().take(300).collect(),
                reason: "it has no second '@' (the form is @name@key)",
            });
        };
        Self::new(name, key)
    }

    /// The entity of an instance ID, if it is one (`@name@key`).
    ///
    /// # Errors
    /// [`CoreError::InvalidEntityId`] if the instance ID is not an entity's.
    pub fn from_instance_id(id: &InstanceId) -> Result<Self, CoreError> {
        Self::parse(id.as_str())
    }

    /// True if `id` is reserved for entities (starts with `@`): the runtime runs messages for
    /// it as entity operations, never as an orchestration.
    #[must_use]
    pub fn is_entity_instance(id: &InstanceId) -> bool {
        id.as_str().starts_with('@')
    }

    /// The entity name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.instance.as_str()[1..=self.name_len]
    }

    /// The key.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.instance.as_str()[self.name_len + 2..]
    }

    /// The entity's instance ID, `@name@key`.
    #[must_use]
    pub fn instance_id(&self) -> &InstanceId {
        &self.instance
    }

    /// The instance ID prefix of every entity with this name, `@name@` (for listings).
    #[must_use]
    pub fn name_prefix(name: &str) -> String {
        format!("@{name}@")
    }
}

impl fmt::Display for EntityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.instance.as_str())
    }
}

impl FromStr for EntityId {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl Serialize for EntityId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.instance.as_str())
    }
}

impl<'de> Deserialize<'de> for EntityId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_bad_ones_are_typed_errors() {
        let id = EntityId::new("Counter", "a@b").expect("valid");
        assert_eq!(id.name(), "Counter");
        assert_eq!(id.key(), "a@b");
        assert_eq!(id.instance_id().as_str(), "@Counter@a@b");
        assert_eq!(EntityId::parse("@Counter@a@b").expect("parses"), id);
        let json = serde_json::to_string(&id).expect("serializes");
        assert_eq!(json, "\"@Counter@a@b\"");
        assert_eq!(
            serde_json::from_str::<EntityId>(&json).expect("deserializes"),
            id
        );
        for (name, key) in [
            ("", "k"),
            ("n", ""),
            ("a@b", "k"),
            ("n", "k/1"),
            ("n", "k\n"),
            ("n", &"x".repeat(300)),
        ] {
            assert!(
                matches!(
                    EntityId::new(name, key),
                    Err(CoreError::InvalidEntityId { .. })
                ),
                "{name:?} {key:?}"
            );
        }
        for bad in ["Counter", "@Counter", "@@k", "x@Counter@k"] {
            assert!(
                matches!(EntityId::parse(bad), Err(CoreError::InvalidEntityId { .. })),
                "{bad}"
            );
        }
        assert!(EntityId::is_entity_instance(id.instance_id()));
        assert!(!EntityId::is_entity_instance(
            &InstanceId::new("order-1").expect("valid")
        ));
    }
}
