"""An MCP server for contenox's MCP tests, written with the Python SDK's MCPServer (mcp 2.x's
name for FastMCP).

Run: `python fast_server.py` (stdio) or `python fast_server.py http PORT` (streamable HTTP on
127.0.0.1:PORT, path /mcp).

Environment:
- CANCEL_MARKER: a file the `sleep` tool writes "cancelled" to when the client cancels it.
- FAIL_AT_START: write this text to stderr and exit 2 before serving (a server that fails).
"""

import asyncio
import hashlib
import os
import sys

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types import ToolAnnotations

if os.environ.get("FAIL_AT_START"):
    print(os.environ["FAIL_AT_START"], file=sys.stderr, flush=True)
    sys.exit(2)

print("fast server starting", file=sys.stderr, flush=True)

server = MCPServer("fast")


@server.tool(
    annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False, openWorldHint=False)
)
def lookup(key: str) -> str:
    """Look a key up (read-only)."""
    return f"value of {key}"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def delete_item(item: str) -> str:
    """Delete an item for good."""
    return f"deleted {item}"


@server.tool(annotations=ToolAnnotations(openWorldHint=True))
def fetch_remote(url: str) -> str:
    """Pretend to reach another system (open world; other hints absent)."""
    return f"fetched {url}"


@server.tool()
def plain(text: str) -> str:
    """A tool without annotations."""
    return text


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def whoami(user: str, tenant: str, api_key: str = "") -> str:
    """Who is asking, for which tenant."""
    return f"user={user} tenant={tenant} key={api_key}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def secrets_check(user: str, tenant: str, ctx: Context) -> str:
    """Proves what arrived without repeating it: digests of `tenant` and of the X-Api-Key header."""
    request = getattr(ctx.request_context, "request", None)
    headers = getattr(request, "headers", None)
    header = headers.get("x-api-key", "") if headers is not None else ""
    return f"user={user} tenant_sha={_digest(tenant)} header_sha={_digest(header)}"


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer "slept"; writes CANCEL_MARKER when cancelled."""
    try:
        await asyncio.sleep(seconds)
    except BaseException:
        marker = os.environ.get("CANCEL_MARKER")
        if marker:
            with open(marker, "w") as f:
                f.write("cancelled")
        raise
    return "slept"


@server.tool()
def crash() -> str:
    """Exit the server process at once, mid-call."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Add a tool named `name` and tell the client the list changed."""

    def added() -> str:
        return f"{name} here"

    server.add_tool(added, name=name, description=f"A tool added at run time: {name}")
    await ctx.session.send_tool_list_changed()
    return "added"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def picture() -> Image:
    """A small PNG."""
    png = (
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00"
        b"\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N"
        b"\x00\x00\x00\x00IEND\xaeB`\x82"
    )
    return Image(data=png, format="png")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def weather(city: str) -> dict[str, object]:
    """Structured output."""
    return {"city": city, "celsius": 21}


@server.tool()
def refuse(reason: str) -> str:
    """Always fails (an error result)."""
    raise ValueError(f"refused: {reason}")


@server.resource("note://hello", name="hello", mime_type="text/plain", description="A greeting")
def hello() -> str:
    return "hello from a resource"


@server.resource("data://bytes", name="bytes", mime_type="application/octet-stream")
def some_bytes() -> bytes:
    return bytes(range(256)) * 4


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
