//! An MCP tool as a toolkit tool, and MCP results as tool outputs.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::tool::inject::{merge_injected, strip_injected};
use crate::tool::{Hints, Source, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// What an MCP tool needs of its server: the server's name and a call. Declared here and
/// implemented by the server (`server.rs`), so this file does not depend on the server's.
#[async_trait]
pub(crate) trait ToolServer: Send + Sync {
    /// The server's name in the `mcpServers` config.
    fn name(&self) -> &str;
    /// Call the server's tool `tool` with arguments already merged, in the turn of `ctx` (whose
    /// gate, `wait_for` and model answer the server's requests during the call).
    async fn call_tool(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: &ToolContext,
    ) -> ToolOutput;
}

/// One tool of one MCP server.
pub(crate) struct McpTool {
    pub server: Arc<dyn ToolServer>,
    /// The name the server knows.
    pub mcp_name: String,
    /// The name the model sees (`<server>__<tool>`, sanitised).
    pub spec_name: String,
    spec: ToolSpec,
    /// The injected parameters this tool declares (hidden from the model, merged into calls).
    inject: Map<String, Value>,
}

impl McpTool {
    /// Build from the server's `tools/list` entry (MCP's JSON shape); `inject` is the server's
    /// injected parameters.
    pub fn new(
        server: Arc<dyn ToolServer>,
        spec_name: String,
        listed: &Value,
        inject: &Map<String, Value>,
    ) -> McpTool {
        let mcp_name = listed["name"].as_str().unwrap_or_default().to_string();
        let description = listed
            .get("description")
            .and_then(Value::as_str)
            .or_else(|| listed.get("title").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string();
        let mut schema = match listed.get("inputSchema") {
            Some(Value::Object(o)) => Value::Object(o.clone()),
            _ => json!({"type": "object"}),
        };
        let inject = strip_injected(&mut schema, inject);
        let spec = ToolSpec::new(spec_name.clone(), description, schema)
            .with_hints(hints_from(listed.get("annotations")));
        McpTool {
            server,
            mcp_name,
            spec_name,
            spec,
            inject,
        }
    }
}

/// MCP annotations to hints: readOnlyHint, destructiveHint, openWorldHint; absent stays absent.
pub(crate) fn hints_from(annotations: Option<&Value>) -> Hints {
    let get = |key: &str| {
        annotations
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    Hints {
        read_only: get("readOnlyHint"),
        destructive: get("destructiveHint"),
        open_world: get("openWorldHint"),
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn source(&self) -> Source {
        Source::Mcp
    }

    fn server(&self) -> Option<String> {
        Some(self.server.name().to_string())
    }

    async fn call(&self, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args = merge_injected(args, &self.inject)?;
        Ok(self.server.call_tool(&self.mcp_name, args, &ctx).await)
    }
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    let len = trimmed.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    len * 3 / 4
}

/// A line standing for binary content: kind, MIME type and size, never the bytes.
fn blob_summary(kind: &str, mime: Option<&str>, data: &str, uri: Option<&str>) -> String {
    let mime = mime.unwrap_or("application/octet-stream");
    let size = base64_len(data);
    match uri {
        Some(uri) => format!("[{kind} {uri}: {mime}, {size} bytes]"),
        None => format!("[{kind}: {mime}, {size} bytes]"),
    }
}

/// One content block (MCP's JSON shape) as text.
pub(crate) fn block_text(block: &Value) -> String {
    let s = |k: &str| block.get(k).and_then(Value::as_str);
    match s("type").unwrap_or_default() {
        "text" => s("text").unwrap_or_default().to_string(),
        "image" => blob_summary("image", s("mimeType"), s("data").unwrap_or_default(), None),
        "audio" => blob_summary("audio", s("mimeType"), s("data").unwrap_or_default(), None),
        "resource" => resource_text(block.get("resource").unwrap_or(&Value::Null)),
        "resource_link" => {
            let mut line = format!("[resource link: {}", s("uri").unwrap_or_default());
            let extra: Vec<String> = [s("name"), s("mimeType")]
                .into_iter()
                .flatten()
                .map(str::to_string)
                .chain(
                    block
                        .get("size")
                        .and_then(Value::as_u64)
                        .map(|n| format!("{n} bytes")),
                )
                .collect();
            if !extra.is_empty() {
                line.push_str(&format!(" ({})", extra.join(", ")));
            }
            line.push(']');
            line
        }
        other => format!("[{other} content]"),
    }
}

/// Resource contents (MCP's `{uri, mimeType, text | blob}`) as text: text as it is, blobs
/// summarised.
pub(crate) fn resource_text(contents: &Value) -> String {
    let s = |k: &str| contents.get(k).and_then(Value::as_str);
    if let Some(text) = s("text") {
        return text.to_string();
    }
    blob_summary(
        "blob",
        s("mimeType"),
        s("blob").unwrap_or_default(),
        s("uri"),
    )
}

/// Whether `structured` says nothing the text does not (the text is its JSON, or it only wraps
/// the text, as `{"result": text}`).
fn restates(text: &str, structured: &Value) -> bool {
    if serde_json::from_str::<Value>(text).is_ok_and(|v| &v == structured) {
        return true;
    }
    match structured {
        Value::Object(o) if o.len() == 1 => o.values().next().is_some_and(|only| {
            only.as_str() == Some(text)
                || serde_json::from_str::<Value>(text).is_ok_and(|v| &v == only)
        }),
        _ => false,
    }
}

/// An MCP `CallToolResult` (JSON) as a tool output: the content blocks as text (blobs
/// summarised), the structured content (as the content when there is no text, or in
/// `metadata.structuredContent` when the text does not already say it), and `isError`.
pub(crate) fn convert_result(result: &Value) -> ToolOutput {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let text = blocks.iter().map(block_text).collect::<Vec<_>>().join("\n");
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut out = match structured {
        Some(s) if blocks.is_empty() => ToolOutput::json(s.clone()),
        Some(s) if !restates(&text, s) => {
            ToolOutput::text(text).with_metadata(json!({"structuredContent": s}))
        }
        _ => ToolOutput::text(text),
    };
    out.is_error = is_error;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_map_and_absent_stays_absent() {
        let h = hints_from(Some(&json!({"readOnlyHint": true, "openWorldHint": false})));
        assert_eq!(h.read_only, Some(true));
        assert_eq!(h.destructive, None);
        assert_eq!(h.open_world, Some(false));
        assert!(hints_from(None).is_empty());
        assert_eq!(
            hints_from(Some(&json!({"destructiveHint": true}))).destructive,
            Some(true)
        );
    }

    #[test]
    fn results_convert() {
        let out = convert_result(&json!({
            "content": [{"type": "text", "text": "hi"},
                        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}],
            "isError": false
        }));
        assert_eq!(out.content, json!("hi\n[image: image/png, 8 bytes]"));
        assert!(!out.is_error);
        assert!(out.metadata.is_none());

        let out = convert_result(&json!({"content": [], "structuredContent": {"a": 1}}));
        assert_eq!(out.content, json!({"a": 1}));

        let out = convert_result(&json!({
            "content": [{"type": "text", "text": "value"}],
            "structuredContent": {"result": "value"}
        }));
        assert_eq!(out.content, json!("value"));
        assert!(out.metadata.is_none());

        let out = convert_result(&json!({
            "content": [{"type": "text", "text": "sunny"}],
            "structuredContent": {"sky": "clear", "c": 20}
        }));
        assert_eq!(out.content, json!("sunny"));
        assert_eq!(
            out.metadata,
            Some(json!({"structuredContent": {"sky": "clear", "c": 20}}))
        );

        let out = convert_result(&json!({
            "content": [{"type": "text", "text": "boom"}], "isError": true
        }));
        assert!(out.is_error);

        let out = convert_result(&json!({"content": [
            {"type": "resource", "resource": {"uri": "a://b", "mimeType": "application/zip", "blob": "AAAA"}},
            {"type": "resource", "resource": {"uri": "a://c", "text": "inline"}},
            {"type": "resource_link", "uri": "a://d", "name": "d", "mimeType": "text/plain"}
        ]}));
        assert_eq!(
            out.content,
            json!("[blob a://b: application/zip, 3 bytes]\ninline\n[resource link: a://d (d, text/plain)]")
        );
    }
}
