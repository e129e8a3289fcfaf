//! `schemars::JsonSchema` for the one event type whose serde form is written by hand
//! ([`Answer`]); every other type of the event vocabulary derives it (feature `schema`).

use std::borrow::Cow;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

use crate::gate::Answer;

impl JsonSchema for Answer {
    fn schema_name() -> Cow<'static, str> {
        "Answer".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The host's answer to a pending request.",
            "oneOf": [
                {
                    "description": "Run the call (`approve: true`), or refuse it with an optional message.",
                    "type": "object",
                    "properties": {
                        "approve": { "type": "boolean" },
                        "message": { "type": "string" }
                    },
                    "required": ["approve"],
                    "additionalProperties": false
                },
                {
                    "description": "Do not run it: this value is the call's result.",
                    "type": "object",
                    "properties": { "result": true },
                    "required": ["result"],
                    "additionalProperties": false
                }
            ]
        })
    }
}
