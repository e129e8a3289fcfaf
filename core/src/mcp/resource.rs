//! The opt-in resource tools: `list_mcp_resources` and `read_mcp_resource`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::server::{CallError, Server};
use super::tool::resource_text;
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// The name of the listing tool.
pub const LIST_MCP_RESOURCES: &str = "list_mcp_resources";
/// The name of the reading tool.
pub const READ_MCP_RESOURCE: &str = "read_mcp_resource";

fn hints() -> Hints {
    Hints {
        read_only: Some(true),
        destructive: Some(false),
        open_world: None,
    }
}

fn server_schema(servers: &[Arc<Server>], description: &str) -> Value {
    let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    json!({"type": "string", "enum": names, "description": description})
}

fn find<'a>(servers: &'a [Arc<Server>], name: &str) -> Result<&'a Arc<Server>, ToolError> {
    servers.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        ToolError::new(format!(
            "unknown MCP server {name:?}; the servers are: {}",
            known.join(", ")
        ))
    })
}

/// `list_mcp_resources {server?}`: the resources of one server, or of every server that offers
/// any, as a JSON array of `{server, uri, name, mimeType?, description?}`.
pub(crate) struct ListResources {
    pub servers: Arc<Vec<Arc<Server>>>,
}

#[async_trait]
impl Tool for ListResources {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            LIST_MCP_RESOURCES,
            "List the resources (documents, files, data) that the connected MCP servers offer. \
             Give `server` to list one server's only. Read one with read_mcp_resource.",
            json!({
                "type": "object",
                "properties": {
                    "server": server_schema(&self.servers, "Only this server's resources.")
                },
                "additionalProperties": false
            }),
        )
        .with_hints(hints())
    }

    fn source(&self) -> Source {
        Source::Mcp
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let only = args.get("server").and_then(Value::as_str);
        let chosen: Vec<&Arc<Server>> = match only {
            Some(name) => vec![find(&self.servers, name)?],
            None => self.servers.iter().collect(),
        };
        let mut listed = Vec::new();
        let mut failures = Vec::new();
        for server in chosen {
            match server.offers_resources().await {
                Ok(true) => {}
                Ok(false) if only.is_some() => {
                    return Ok(ToolOutput::error(format!(
                        "MCP server {} offers no resources",
                        server.name
                    )))
                }
                Ok(false) => continue,
                Err(CallError::Cancelled) => return Ok(CallError::Cancelled.into_output()),
                Err(CallError::Connect(m) | CallError::Failed(m)) => {
                    failures.push(m);
                    continue;
                }
            }
            match server.list_resources(&ctx.cancel).await {
                Ok(resources) => {
                    for r in resources {
                        let mut entry =
                            json!({"server": server.name, "uri": r["uri"], "name": r["name"]});
                        for key in ["mimeType", "description", "size"] {
                            if let Some(v) = r.get(key).filter(|v| !v.is_null()) {
                                entry[key] = v.clone();
                            }
                        }
                        listed.push(entry);
                    }
                }
                Err(CallError::Cancelled) => return Ok(CallError::Cancelled.into_output()),
                Err(CallError::Connect(m) | CallError::Failed(m)) => failures.push(m),
            }
        }
        if only.is_some() && !failures.is_empty() {
            return Ok(ToolOutput::error(failures.join("\n")));
        }
        let out = ToolOutput::json(Value::Array(listed));
        Ok(if failures.is_empty() {
            out
        } else {
            out.with_metadata(json!({"errors": failures}))
        })
    }
}

/// `read_mcp_resource {server, uri}`: the resource's text; binary contents summarised with
/// their MIME type and size.
pub(crate) struct ReadResource {
    pub servers: Arc<Vec<Arc<Server>>>,
}

#[async_trait]
impl Tool for ReadResource {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            READ_MCP_RESOURCE,
            "Read one resource of an MCP server by its URI (see list_mcp_resources).",
            json!({
                "type": "object",
                "properties": {
                    "server": server_schema(&self.servers, "The server that offers the resource."),
                    "uri": {"type": "string", "description": "The resource's URI."}
                },
                "required": ["server", "uri"],
                "additionalProperties": false
            }),
        )
        .with_hints(hints())
    }

    fn source(&self) -> Source {
        Source::Mcp
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let name = args["server"].as_str().unwrap_or_default();
        let uri = args["uri"].as_str().unwrap_or_default();
        let server = find(&self.servers, name)?;
        match server.read_resource(uri, &ctx.cancel).await {
            Ok(result) => {
                let contents = result
                    .get("contents")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let text = contents
                    .iter()
                    .map(resource_text)
                    .collect::<Vec<_>>()
                    .join("\n");
                Ok(ToolOutput::text(text))
            }
            Err(e) => Ok(e.into_output()),
        }
    }
}
