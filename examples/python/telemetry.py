"""Traces of a turn, as OpenTelemetry spans (GenAI semantic conventions), posted to a local
collector: a lead whose model asks a researcher subagent, on the scripted model (no network, no
key). Start a collector listening for OTLP/HTTP on 127.0.0.1:4318 first (docs/telemetry.md);
without one the turn runs all the same and its spans are dropped.

    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 python examples/python/telemetry.py
"""

from __future__ import annotations

import os

import contenox


def main() -> None:
    researcher = contenox.create_client(
        style="scripted", script=[{"text": "The answer is 42."}], builtins=[]
    )
    lead = contenox.create_client(
        style="scripted",
        script=[
            {
                "tool_calls": [
                    {"id": "c1", "name": "researcher", "arguments": {"prompt": "Find it."}}
                ]
            },
            {"text": "Researcher says 42."},
        ],
        builtins=[],
        # True reads the standard OTEL_* variables; a dict sets the endpoint, headers,
        # include_contents (prompts and results on the spans, off by default), service_name.
        telemetry={
            "endpoint": os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            "service_name": "telemetry-example",
        },
    )
    lead.register(researcher.as_tool_with("researcher", "Looks things up."))
    result = lead.run_sync("What is the answer?")
    print("done:", result.final_text)
    # close() sends the spans still queued (a few seconds at most when the collector is slow).
    lead.close()
    researcher.close()


if __name__ == "__main__":
    main()
