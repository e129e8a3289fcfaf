import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def text_of(message: dict) -> str:  # type: ignore[type-arg]
    """The text of a transcript message: its text parts, joined."""
    return "".join(p["text"] for p in message["content"] if p["type"] == "text")


def with_text(message: dict) -> dict:  # type: ignore[type-arg]
    """The message with its text as `content` (what the tests compare)."""
    return {**message, "content": text_of(message)}
