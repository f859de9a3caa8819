//! Context layers and the direction tags every cross-layer packet carries.
//!
//! The tags are zero-sized types that serialize as exactly one string (`"brain"` or
//! `"agent"`) and refuse any other value, so a packet travelling the wrong way (an agent
//! packet passed where a brain packet is expected) fails to deserialize with a message that
//! names the expected and the found layer.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The two context layers: the Brain (orchestration) and an agent (one isolated task).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextLayer {
    /// The orchestrator's layer.
    Brain,
    /// A worker's layer.
    Agent,
}

impl ContextLayer {
    /// The JSON name of the layer.
    pub const fn as_str(self) -> &'static str {
        match self {
            ContextLayer::Brain => "brain",
            ContextLayer::Agent => "agent",
        }
    }
}

impl fmt::Display for ContextLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Deserializes a layer tag that must equal `expected`.
fn expect_layer<'de, D: Deserializer<'de>>(
    deserializer: D,
    expected: ContextLayer,
) -> Result<(), D::Error> {
    struct TagVisitor(ContextLayer);

    impl Visitor<'_> for TagVisitor {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "the layer tag \"{}\"", self.0)
        }

        fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
            if value == self.0.as_str() {
                Ok(())
            } else {
                Err(E::custom(format!(
                    "wrong context layer tag {value:?}: expected \"{}\" (handoff packets go \
                     brain -> agent, worker results go agent -> brain; there is no other \
                     direction)",
                    self.0
                )))
            }
        }
    }

    deserializer.deserialize_str(TagVisitor(expected))
}

/// The `"brain"` tag: a field that can only hold the Brain layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BrainLayer;

/// The `"agent"` tag: a field that can only hold the agent layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AgentLayer;

impl BrainLayer {
    /// The layer this tag stands for.
    pub const LAYER: ContextLayer = ContextLayer::Brain;
}

impl AgentLayer {
    /// The layer this tag stands for.
    pub const LAYER: ContextLayer = ContextLayer::Agent;
}

impl Serialize for BrainLayer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Self::LAYER.as_str())
    }
}

impl Serialize for AgentLayer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Self::LAYER.as_str())
    }
}

impl<'de> Deserialize<'de> for BrainLayer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        expect_layer(deserializer, Self::LAYER).map(|()| BrainLayer)
    }
}

impl<'de> Deserialize<'de> for AgentLayer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        expect_layer(deserializer, Self::LAYER).map(|()| AgentLayer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_as_plain_strings() {
        assert_eq!(serde_json::to_string(&BrainLayer).unwrap(), "\"brain\"");
        assert_eq!(serde_json::to_string(&AgentLayer).unwrap(), "\"agent\"");
        assert_eq!(
            serde_json::from_str::<BrainLayer>("\"brain\"").unwrap(),
            BrainLayer
        );
        assert_eq!(
            serde_json::from_str::<AgentLayer>("\"agent\"").unwrap(),
            AgentLayer
        );
    }

    #[test]
    fn a_wrong_tag_names_both_layers() {
        let err = serde_json::from_str::<BrainLayer>("\"agent\"")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"agent\"") && err.contains("expected \"brain\""),
            "{err}"
        );
        assert!(serde_json::from_str::<AgentLayer>("7").is_err());
    }
}
