"""A stdio MCP server that asks the client a question it chooses: for the CLI's elicitation
tests, including forms no well-behaved server sends (the SDKs refuse to build them), so it speaks
MCP's JSON-RPC lines itself with the standard library only.

Run: `python3 elicit_server.py FORM` where FORM is
- `simple`: one required string `name` and an optional integer `age` (1 to 130);
- `nested`: a field that is an object of objects;
- `unknown`: a field of type "uuid";
- `wide`: 100 fields;
- `huge`: one field whose description is 2 MB.

Its one tool, `ask`, sends `elicitation/create` with that form and returns the client's answer
as text: `action=<action> content=<JSON>`.
"""

import json
import sys

FORM = sys.argv[1] if len(sys.argv) > 1 else "simple"


def schema() -> dict:
    if FORM == "simple":
        return {
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name"},
                "age": {"type": "integer", "minimum": 1, "maximum": 130},
            },
            "required": ["name"],
        }
    if FORM == "nested":
        return {
            "type": "object",
            "properties": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "object", "properties": {}}},
                }
            },
        }
    if FORM == "unknown":
        return {"type": "object", "properties": {"id": {"type": "uuid"}}}
    if FORM == "wide":
        return {
            "type": "object",
            "properties": {f"f{i}": {"type": "string"} for i in range(100)},
        }
    if FORM == "huge":
        return {
            "type": "object",
            "properties": {"f": {"type": "string", "description": "x" * 2_000_000}},
        }
    raise SystemExit(f"unknown form {FORM}")


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer_to(request_id: object) -> dict:
    """Read messages until the response to our request `request_id`."""
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return message
        if "method" in message and "id" in message:
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
    raise SystemExit(0)


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        rid = message.get("id")
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "elicit", "version": "1"},
                    },
                }
            )
        elif method == "tools/list":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {
                        "tools": [
                            {
                                "name": "ask",
                                "description": "Ask the user a question.",
                                "inputSchema": {"type": "object", "properties": {}},
                                "annotations": {"readOnlyHint": True},
                            }
                        ]
                    },
                }
            )
        elif method == "tools/call":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": "elicit-1",
                    "method": "elicitation/create",
                    "params": {"message": "Who are you?", "requestedSchema": schema()},
                }
            )
            reply = answer_to("elicit-1")
            result = reply.get("result") or {}
            text = "action={} content={}".format(
                result.get("action"), json.dumps(result.get("content"), sort_keys=True)
            )
            if "error" in reply:
                text = "error={}".format(json.dumps(reply["error"]))
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "result": {"content": [{"type": "text", "text": text}]},
                }
            )
        elif rid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": rid, "result": {}})


main()
