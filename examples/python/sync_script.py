"""The sync facade for scripts: run_sync, a sync tool, a sync gate, and a saved transcript.
Nothing here imports asyncio: run_sync waits for the engine's turn directly.

python examples/python/sync_script.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import contenox


def main() -> None:
    client = contenox.create_client(
        style="scripted",
        script=[
            {"tool_calls": [{"id": "c1", "name": "word_count", "arguments": {"text": "a b c"}}]},
            {"text": "Three words."},
            {"text": "You asked me to count words."},
        ],
        builtins=[],
        hooks={"before_tool": lambda call: None if call.name == "word_count" else contenox.deny()},
    )

    @client.tool(hints={"read_only": True})
    def word_count(text: str) -> int:
        """Count the words of a text."""
        return len(text.split())

    first = client.run_sync("How many words in 'a b c'?")
    print(first.outcome, first.final_text)

    with tempfile.TemporaryDirectory() as tmp:
        saved = Path(tmp) / "conversation.json"
        client.transcript.save(saved)
        restored = contenox.Transcript.load(saved)
        client.transcript = restored
    second = client.run_sync("What did I ask?")
    print(second.outcome, second.final_text, f"({len(second.transcript)} messages)")


if __name__ == "__main__":
    main()
