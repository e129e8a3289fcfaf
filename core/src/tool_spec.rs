//! What a tool declares about itself.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Advisory hints about what a tool does. `None` means unknown, which the gate should treat as
/// mutating. Hints are never sent to the model.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hints {
    /// The tool only reads.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "read_only")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// The tool reaches outside the machine (network, other people's systems).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "open_world")]
    pub open_world: Option<bool>,
}

impl Hints {
    /// Hints of a tool that only reads local data.
    pub const fn read_only() -> Self {
        Hints {
            read_only: Some(true),
            destructive: Some(false),
            open_world: Some(false),
        }
    }

    /// Hints of a tool that overwrites local data.
    pub const fn destructive() -> Self {
        Hints {
            read_only: Some(false),
            destructive: Some(true),
            open_world: Some(false),
        }
    }

    /// True when all three hints are unknown.
    pub fn is_empty(&self) -> bool {
        self.read_only.is_none() && self.destructive.is_none() && self.open_world.is_none()
    }
}

/// Whether a tool is sent to the model (`core`) or reached through `call_tool` (`deferred`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Sent to the model with every request.
    #[default]
    Core,
    /// Listed in `call_tool`'s description and called through it.
    Deferred,
}

/// Where a tool comes from.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Built into contenox.
    Builtin,
    /// Given by the host program.
    #[default]
    Host,
    /// An MCP server's tool.
    Mcp,
    /// An HTTP service of a remote hook (an operation of its OpenAPI document, or its one
    /// protocol tool).
    Remote,
    /// A subagent offered as a tool.
    Subagent,
}

impl Source {
    /// The snake_case name (`builtin`, `host`, `mcp`, `remote`, `subagent`).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Builtin => "builtin",
            Source::Host => "host",
            Source::Mcp => "mcp",
            Source::Remote => "remote",
            Source::Subagent => "subagent",
        }
    }
}

/// A tool's declaration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Matches `^[A-Za-z0-9_-]{1,64}$`.
    pub name: String,
    /// Written for the model.
    pub description: String,
    /// A JSON Schema for the arguments (an object schema).
    pub input_schema: Value,
    /// Advisory hints for the gate.
    #[serde(default)]
    pub hints: Hints,
    /// core or deferred.
    #[serde(default)]
    pub tier: Tier,
}

impl ToolSpec {
    /// A core-tier spec with unknown hints.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            input_schema,
            hints: Hints::default(),
            tier: Tier::Core,
        }
    }

    /// Set the hints.
    pub fn with_hints(mut self, hints: Hints) -> Self {
        self.hints = hints;
        self
    }

    /// Set the tier.
    pub fn with_tier(mut self, tier: Tier) -> Self {
        self.tier = tier;
        self
    }
}

/// Whether `name` follows the strictest provider's rule, `^[A-Za-z0-9_-]{1,64}$`.
pub fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
