"""Shared fixtures of the durable-engine crash tests: the fake model server, a work directory per
test, and the processes a test starts (each stopped by its pid at the end; the test asserts none
is left)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from servers import FakeModel, fake_model, stop_process, wait_gone

HERE = Path(__file__).resolve().parent
# A secret planted in the config of every test process: no engine record may hold it.
PLANTED_KEY = "sk-durable-planted-7f3c9e1d"


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_EXIT] = int(exitstatus)


def pytest_unconfigure(config: pytest.Config) -> None:
    # The Temporal SDK's Rust runtime threads (the dev server's client, in test_temporal.py) can
    # abort the interpreter's teardown (temporalio/sdk-python issue 300): once pytest has said
    # everything, leave with its own exit status and skip the teardown.
    if _EXIT in config.stash and "temporalio" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(config.stash[_EXIT])


_EXIT = pytest.StashKey[int]()


class Processes:
    """The app processes one test starts (A, B1, B2, ...); all stopped by pid at the end."""

    def __init__(self, workdir: Path, model: FakeModel) -> None:
        self.workdir = workdir
        self.model = model
        self.started: list[subprocess.Popen[str]] = []

    def env(self, role: str, **extra: str) -> dict[str, str]:
        env = {
            **os.environ,
            "DURABLE_BASE_URL": self.model.base_url("openai"),
            "DURABLE_WORKDIR": str(self.workdir),
            "DURABLE_ROLE": role,
            "DURABLE_API_KEY": PLANTED_KEY,
            "PYTHONPATH": str(HERE),
        }
        env.update(extra)
        return env

    def start(self, role: str, argv: list[str], **extra: str) -> subprocess.Popen[str]:
        log = open(self.workdir / f"{role}.log", "w")
        proc = subprocess.Popen(
            argv,
            env=self.env(role, **extra),
            cwd=HERE,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        log.close()
        self.started.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[str]) -> None:
        """SIGKILL: the process dies with no chance to clean up (a crash)."""
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    def output(self, proc: subprocess.Popen[str], role: str, timeout: float = 60) -> Any:
        """The JSON a finishing process printed last; fails with its stderr if it failed."""
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_process(proc, signal.SIGKILL)
            raise AssertionError(f"{role} did not finish: {self.log(role)}") from None
        assert proc.returncode == 0, f"{role} exited {proc.returncode}: {self.log(role)}"
        lines = [line for line in out.splitlines() if line.strip()]
        assert lines, f"{role} printed nothing: {self.log(role)}"
        return json.loads(lines[-1])

    def log(self, role: str) -> str:
        path = self.workdir / f"{role}.log"
        return path.read_text()[-4000:] if path.exists() else ""

    def records(self, name: str) -> list[dict[str, Any]]:
        path = self.workdir / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def stop_all(self) -> None:
        for proc in self.started:
            stop_process(proc, signal.SIGKILL, grace=0)
        wait_gone([p.pid for p in self.started])


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with fake_model(HERE / "write_turn.json") as server:
        yield server


@pytest.fixture
def procs(tmp_path: Path, model: FakeModel) -> Iterator[Processes]:
    work = tmp_path / "work"
    work.mkdir()
    p = Processes(work, model)
    try:
        yield p
    finally:
        p.stop_all()


def assert_model_called_once_per_step(model: FakeModel, steps: int) -> list[Any]:
    """The fake server answered exactly ``steps`` requests, no two alike (none repeated)."""
    requests = model.requests()
    assert len(requests) == steps, json.dumps(requests, indent=1)[:4000]
    bodies = [json.dumps(r, sort_keys=True) for r in requests]
    assert len(set(bodies)) == len(bodies), "a model request was repeated"
    return requests


def tool_messages(request: Any) -> list[dict[str, Any]]:
    """The tool results a chat-completions request carried."""
    body = request.get("body", request) if isinstance(request, dict) else request
    return [m for m in body.get("messages", []) if m.get("role") == "tool"]
