"""The sandbox seen from a Python host, as the issue's probe ran it: a host holding a connected
TCP socket on fd 9 and a file outside the root on fd 7 (both inheritable, as ``pass_fds``, a
shell redirect or socket activation leave them) runs bash with ``sandbox={"network": False}``.
Neither descriptor may reach the command: no byte through the socket either way, nothing
appended to the file, and the command's shell holds only 0, 1 and 2."""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import contenox
import pytest
from conftest import text_of

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="Linux sandbox")


def recording_server() -> tuple[int, threading.Thread, list[bytes]]:
    """A loopback server that greets one connection and keeps what it receives until the peer
    closes (or 10 s pass)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    received: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        listener.close()
        with conn:
            conn.sendall(b"hello\n")
            conn.settimeout(10)
            try:
                while chunk := conn.recv(4096):
                    received.append(chunk)
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return port, thread, received


def bash_result(r: contenox.TurnResult) -> str:
    tool: list[Any] = [m for m in r.transcript.messages if m["role"] == "tool"]
    assert len(tool) == 1, r.transcript.messages
    return text_of(tool[0])


async def test_inherited_socket_and_file_never_reach_a_command(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    victim = tmp_path / "victim"
    victim.touch()
    port, server, received = recording_server()
    sock = socket.create_connection(("127.0.0.1", port))
    file_fd = os.open(victim, os.O_WRONLY | os.O_APPEND)
    saved = {fd: os.dup(fd) if _is_open(fd) else None for fd in (7, 9)}
    try:
        os.dup2(file_fd, 7, inheritable=True)
        os.dup2(sock.fileno(), 9, inheritable=True)
        command = (
            "echo INJECTED >&7; echo file=$?; "
            "printf 'GET /hello HTTP/1.0\\r\\n\\r\\n' >&9; echo send=$?; "
            "timeout 2 cat <&9; echo recv=$?; "
            "echo fds:; ls /proc/$$/fd; echo end"
        )
        client = contenox.create_client(
            style="scripted",
            script=[
                {"tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": command}}]},
                {"text": "ok"},
            ],
            builtins=["bash"],
            root=str(root),
            sandbox={"network": False},
        )
        out = bash_result(await client.run("go"))
        client.close()
    finally:
        for fd, copy in saved.items():
            if copy is None:
                os.close(fd)
            else:
                os.dup2(copy, fd)
                os.close(copy)
        os.close(file_fd)
        sock.close()
    server.join(15)
    assert "file=0" not in out and "send=0" not in out and "recv=0" not in out, out
    assert "hello" not in out, out
    assert "fds:\n0\n1\n2\nend\n" in out, out
    assert victim.read_text() == ""
    assert b"".join(received) == b""


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
