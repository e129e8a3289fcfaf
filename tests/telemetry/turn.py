"""One turn with a subagent and a denied call, its spans sent to the collector at argv[1].

Run by tests/telemetry/check.py, which starts the collector and compares what it stored of this
turn with what it stored of turn.mjs's (the same turn from Node)."""

import asyncio
import sys

import contenox

SECRET = "sk-PLANTED-SECRET-4242"


async def main(endpoint: str) -> None:
    researcher = contenox.create_client(
        style="scripted",
        model="small-model",
        api_key=SECRET,
        builtins=[],
        script=[{"text": "The answer is 42."}],
    )
    lead = contenox.create_client(
        style="scripted",
        model="big-model",
        api_key=SECRET,
        headers={"x-secret": SECRET},
        builtins=["bash"],
        temperature=0.25,
        policy={
            "rules": [{"tool": "bash", "action": "deny", "name": "no shell"}],
            "default_action": "allow",
        },
        script=[
            {
                "tool_calls": [
                    {
                        "id": "c1",
                        "name": "researcher",
                        "arguments": {"prompt": "Find it."},
                    }
                ]
            },
            {
                "tool_calls": [
                    {
                        "id": "c2",
                        "name": "bash",
                        "arguments": {"command": f"echo {SECRET}"},
                    }
                ]
            },
            {"text": "Researcher says 42."},
        ],
        telemetry={
            "endpoint": endpoint,
            "service_name": "contenox-python",
            "headers": {"authorization": f"Bearer {SECRET}"},
        },
    )
    lead.register(researcher.as_tool_with("researcher", "Looks things up."))
    result = await lead.run(f"Ask the researcher. {SECRET}")
    assert result.outcome == "done", result
    lead.close()
    researcher.close()


asyncio.run(main(sys.argv[1]))
