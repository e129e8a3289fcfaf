"""A prompt with images, on the scripted model (no network, no key): image bytes, an image file
beneath the root, and a bad part refused before anything is sent.

    python examples/python/images.py
"""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path

import contenox

# A 1x1 PNG. Any PNG, JPEG, GIF or WebP works: the engine reads the type from the bytes.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        Path(root, "shot.png").write_bytes(PNG)
        # The scripted model replays its answer; swap in style="openai", model=... to go live.
        client = contenox.create_client(
            style="scripted", script=[{"text": "Two red pixels."}], builtins=[], root=root
        )
        result = client.run_sync(
            [
                {"type": "text", "text": "What is in these pictures?"},
                {"type": "image", "data": PNG},  # bytes; media_type read from them
                {"type": "image", "path": "shot.png"},  # read beneath the root per request
            ]
        )
        print("done:", result.final_text)
        print("sent:", [p["type"] for p in result.transcript.messages[0]["content"]])
        try:
            client.run_sync([{"type": "image", "data": b"not an image"}])
        except contenox.ConfigurationError as e:
            print("refused:", e.option)
        client.close()


if __name__ == "__main__":
    main()
